// The outline of a large JSON object (src/io/json_outline.h): the ranges
// it notes, the structure and nesting it checks, what it gives up on.
#include <optional>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "io/json_outline.h"

using semmap::internal::JsonOutline;
using semmap::internal::OutlineJson;

namespace {

std::optional<JsonOutline> Outline(const std::string& text, int max_depth = 8) {
  return OutlineJson(text, "m", max_depth, [](std::size_t) {});
}

std::vector<std::string> Elements(const std::string& text, const JsonOutline& outline) {
  std::vector<std::string> out;
  for (const auto& r : outline.elements) out.push_back(text.substr(r.begin, r.end - r.begin));
  return out;
}

}  // namespace

TEST_CASE("The outline notes the members and the array's elements", "[json]") {
  const std::string text = R"( {"a" : 1, "m": [ {"k":"]}\"["}, [1,[2]] ,"s\\" , -1.5e3,true ], "z":{}} )";
  const std::optional<JsonOutline> outline = Outline(text);
  REQUIRE(outline.has_value());
  REQUIRE(outline->members.size() == 3);
  CHECK(outline->members[0].key == "a");
  CHECK(outline->array_member == 1);
  const auto& m = outline->members[1].value;
  CHECK(text.substr(m.begin, m.end - m.begin).front() == '[');
  CHECK(text.substr(m.begin, m.end - m.begin).back() == ']');
  CHECK(Elements(text, *outline) ==
        std::vector<std::string>{R"({"k":"]}\"["})", "[1,[2]]", R"("s\\")", "-1.5e3", "true"});
  const auto& z = outline->members[2].value;
  CHECK(text.substr(z.begin, z.end - z.begin) == "{}");
  const std::optional<JsonOutline> empty = Outline(R"({"m":[]})");
  REQUIRE(empty.has_value());
  CHECK(empty->elements.empty());
}

TEST_CASE("The outline gives up on what it does not check alone", "[json]") {
  auto text = GENERATE(values<std::string>({
      "",
      "[1]",
      R"({"a":1})",                      // no array member
      R"({"m":{}})",                     // not an array
      R"({"m":[],"m":[]})",              // twice
      R"({"\u006d":[],"m":[]})",         // an escaped key
      R"({"m":[1 2]})",                  // no separator
      R"({"m":[1,]})",                   // a separator before the close
      R"({"m":[1]]})",
      R"({"m":[1]} x)",                  // bytes after the object
      R"({"m":[1],})",
      R"({"m" [1]})",
      R"({"m":["abc]})",                 // an unterminated string
      R"({"m":[{"a":[1}]})",             // brackets that never close
  }));
  CAPTURE(text);
  CHECK_FALSE(Outline(text).has_value());
}

TEST_CASE("The outline keeps the nesting limit of the whole text", "[json]") {
  // The object and the array are two levels: elements may nest six more.
  const auto nested = [](int levels) {
    return R"({"m":[)" + std::string(static_cast<std::size_t>(levels), '[') +
           std::string(static_cast<std::size_t>(levels), ']') + "]}";
  };
  CHECK(Outline(nested(6)).has_value());
  CHECK_FALSE(Outline(nested(7)).has_value());
  CHECK(Outline(R"({"m":[],"a":[[[[[[[]]]]]]]})").has_value());
  CHECK_FALSE(Outline(R"({"m":[],"a":[[[[[[[[]]]]]]]]})").has_value());
  // Brackets inside strings do not count.
  CHECK(Outline(R"({"m":["[[[[[[[[[["]})").has_value());
}

TEST_CASE("The outline reports its progress through the text", "[json]") {
  std::string text = R"({"m":[)";
  for (int i = 0; i < 200000; ++i) text += i == 0 ? R"("abcdefghijklmnopqrstuvwxyz")" : R"(,"abcdefghijklmnopqrstuvwxyz")";
  text += "]}";
  std::vector<std::size_t> reported;
  const std::optional<JsonOutline> outline =
      OutlineJson(text, "m", 8, [&](std::size_t n) { reported.push_back(n); });
  REQUIRE(outline.has_value());
  CHECK(outline->elements.size() == 200000);
  REQUIRE_FALSE(reported.empty());
  for (std::size_t k = 1; k < reported.size(); ++k) CHECK(reported[k] > reported[k - 1]);
  CHECK(reported.back() <= text.size());
}
