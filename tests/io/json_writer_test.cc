// The library's streamed JSON (src/io/json_writer.h) is what nlohmann's
// dump(2) writes, and bytes that are not UTF-8 never throw.
#include <sstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "io/json_writer.h"
#include "nlohmann/json.hpp"

namespace {

using semmap::internal::AppendIndentedJson;
using semmap::internal::AppendJsonString;
using semmap::internal::DumpJson;

TEST_CASE("Streamed strings are written as nlohmann writes them", "[json_writer]") {
  std::vector<std::string> texts = {"", "encoder.layer.0", "a\"b", "back\\slash", "tab\there",
                                    "line\nbreak", "é and 中文", "\x7f", "end\x1f"};
  for (int c = 0; c < 0x20; ++c) texts.push_back(std::string("c") + static_cast<char>(c));
  for (const std::string& text : texts) {
    std::string out;
    AppendJsonString(text, &out);
    CHECK(out == nlohmann::json(text).dump());
  }
}

TEST_CASE("Bytes that are not UTF-8 become U+FFFD instead of throwing", "[json_writer]") {
  const std::string bad = "bad\xffname";
  std::string out;
  REQUIRE_NOTHROW(AppendJsonString(bad, &out));
  CHECK(out == "\"bad\xef\xbf\xbdname\"");
  CHECK(DumpJson(nlohmann::json{{"model", bad}}) == "{\n  \"model\": \"bad\xef\xbf\xbdname\"\n}");
}

TEST_CASE("A nested value is indented as in its container's dump", "[json_writer]") {
  const nlohmann::json inner = {{"b", {1, 2}}, {"a", nlohmann::json::object()},
                                {"c", nlohmann::json::array()}, {"d", 0.9}, {"e", nullptr}};
  const nlohmann::json outer = {{"k", inner}};
  std::string out = "{\n  \"k\": ";
  AppendIndentedJson(inner, 2, &out);
  out += "\n}";
  CHECK(out == outer.dump(2));
}

}  // namespace

namespace {

TEST_CASE("An object whose list is written item by item reads as its dump", "[json_writer]") {
  const nlohmann::json head = {{"model", "m.onnx"}, {"count", 3}, {"query", {{"kind", "x"}}}};
  const std::vector<nlohmann::json> items = {
      {{"node", "/a"}, {"confidence", 0.9}}, nlohmann::json::object(), {{"list", {1, 2}}}};
  // The list's key before, between and after the head's keys, and empty.
  for (const std::string key : {"a_first", "modules", "nodes", "z_last"}) {
    for (std::size_t count : {std::size_t{0}, items.size()}) {
      std::ostringstream out;
      semmap::internal::WriteJsonWithList(out, head, key, count, [&](std::size_t i, std::string* text) {
        AppendIndentedJson(items[i], 4, text);
      });
      nlohmann::json whole = head;
      whole[key] = nlohmann::json::array();
      for (std::size_t i = 0; i < count; ++i) whole[key].push_back(items[i]);
      CHECK(out.str() == DumpJson(whole) + "\n");
    }
  }
}

}  // namespace

namespace {

using semmap::internal::AppendJsonNumber;
using semmap::internal::JsonObjectText;

TEST_CASE("Numbers are written as nlohmann writes them", "[json_writer]") {
  // Repeats and alternations too: the writer keeps the last value's text.
  const std::vector<double> values = {0.0, 0.0, 1.0, 0.9, 0.9, 0.15, 0.9, -0.0, 1e-7,
                                      0.123456789012345, 1.0 / 3.0, 12345678.9, 0.0};
  for (double v : values) {
    std::string out;
    AppendJsonNumber(v, &out);
    CHECK(out == nlohmann::json(v).dump());
  }
}

TEST_CASE("An object written member by member reads as its dump at any depth",
          "[json_writer]") {
  const std::string bad = "bad\xffname";
  for (int depth = 0; depth < 3; ++depth) {
    // Keys in sorted order, as nlohmann keeps them.
    std::string text;
    JsonObjectText j(2 * depth, &text);
    j.String("a", "x\"y");
    j.Number("b", 0.95);
    j.Null("c");
    j.String("d", bad);
    j.String("e", "");
    j.Unsigned("f", 18446744073709551615ULL);
    j.Unsigned("g", 0);
    j.Close();
    const nlohmann::json value = {{"a", "x\"y"}, {"b", 0.95}, {"c", nullptr}, {"d", bad},
                                  {"e", ""},      {"f", 18446744073709551615ULL}, {"g", 0u}};
    std::string expected;
    AppendIndentedJson(value, 2 * depth, &expected);
    CHECK(text == expected);
    std::string empty;
    JsonObjectText none(2 * depth, &empty);
    none.Close();
    CHECK(empty == "{}");
  }
}

}  // namespace
