// The JSON reader shared by manifests and rule files
// (src/io/json_reader.h): syntax errors with their byte, limits,
// JSON pointers, repeated keys.
#include <string>
#include <tuple>

#include "catch2/catch.hpp"
#include "io/json_reader.h"
#include "semmap/manifest.h"
#include "test_util.h"

using semmap::internal::JsonDocument;
using semmap::internal::JsonLimits;
using semmap::internal::JsonValue;

namespace {

std::string ParseError(const std::string& text, JsonLimits limits = {1 << 20, 8}) {
  auto doc = JsonDocument::Parse(text, "t.json", limits);
  REQUIRE_FALSE(doc.ok());
  CHECK(doc.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(doc.status().message());
}

}  // namespace

TEST_CASE("JSON syntax errors name the byte and the cause", "[json]") {
  auto row = GENERATE(table<std::string, std::string>({
      {"", "not valid JSON at byte 0: unexpected end of input"},
      {"  ", "not valid JSON at byte 2: unexpected end of input"},
      {"{\"a\": tru}", "not valid JSON at byte 6: invalid literal"},
      {"[1,]", "not valid JSON at byte 3: unexpected character, expected a value"},
      {"[1 2]", "not valid JSON at byte 3: expected ',' or ']'"},
      {"{\"a\" 1}", "not valid JSON at byte 5: expected ':'"},
      {"{1: 2}", "not valid JSON at byte 1: expected a string key"},
      {"[1] x", "not valid JSON at byte 4: unexpected bytes after the JSON value"},
      {"[01]", "not valid JSON at byte 2: expected ',' or ']'"},
      {"[1.]", "not valid JSON at byte 1: invalid number"},
      {"[1e999]", "not valid JSON at byte 1: number overflow"},
      {"[18446744073709551616]", "not valid JSON at byte 1: number overflow"},
      {"[-9223372036854775809]", "not valid JSON at byte 1: number overflow"},
      {"[\"a\tb\"]", "not valid JSON at byte 3: control character"},
      {"[\"a\\qb\"]", "not valid JSON at byte 3: invalid escape"},
      {"[\"\\u12\"]", "not valid JSON at byte 2: invalid \\u escape"},
      {"[\"\\udc00\"]", "not valid JSON at byte 2: unpaired UTF-16 surrogate"},
      {"[\"\\ud800x\"]", "not valid JSON at byte 2: unpaired UTF-16 surrogate"},
      {"[\"a\xff\"]", "not valid JSON at byte 3: invalid UTF-8"},
      {"[\"\xc0\x80\"]", "not valid JSON at byte 2: invalid UTF-8"},  // overlong NUL
      {"[\"\xed\xa0\x80\"]", "not valid JSON at byte 2: invalid UTF-8"},  // a surrogate
      {"[\"abc", "not valid JSON at byte 1: unterminated string"},
      {std::string("[1,\0]", 5), "not valid JSON at byte 3: unexpected character"},
      {"[[[[[[[[[]]]]]]]]]", "JSON nested deeper than 8 levels at byte 8"},
      {std::string(100000, '{'), "JSON nested deeper than 8 levels at byte 8"},
  }));
  CAPTURE(std::get<0>(row));
  const std::string message = ParseError(std::get<0>(row));
  CAPTURE(message);
  CHECK(message.rfind("t.json: ", 0) == 0);
  CHECK(message.find(std::get<1>(row)) != std::string::npos);
}

TEST_CASE("JSON the reader accepts", "[json]") {
  auto text = GENERATE(as<std::string>{}, "[[[[[[[[]]]]]]]]", "{}", "[]", "0", "-0", "\"\"",
                       "[18446744073709551615, -9223372036854775808, 1e308, 1e-400]",
                       "[\"\\ud83d\\ude00 \xf0\x9f\x98\x80 \\u0000 \\/\"]", " \t\r\n[true,false,null]");
  CAPTURE(text);
  auto doc = JsonDocument::Parse(text, "t.json", {1 << 20, 8});
  CHECK(doc.ok());
  CHECK(!semmap::internal::FindJsonSyntaxError(text).has_value());
}

TEST_CASE("An empty view that points nowhere is an ordinary syntax error", "[json]") {
  // absl::string_view() has a null data pointer; a record's empty manifest
  // entry reached the parser this way.
  for (bool padded : {false, true}) {
    auto doc = JsonDocument::Parse(absl::string_view(), "t.json", {1 << 20, 8}, padded);
    REQUIRE_FALSE(doc.ok());
    CHECK(doc.status().message() ==
          "t.json: not valid JSON at byte 0: unexpected end of input, expected a value");
  }
}

TEST_CASE("JSON text above the size limit is refused before parsing", "[json]") {
  const std::string message = ParseError("[1,2,3]", {6, 8});
  CHECK(message == "t.json: JSON text is 7 bytes, above the limit of 6 bytes");
}

TEST_CASE("JSON values know their pointer", "[json]") {
  auto doc = JsonDocument::Parse(R"({"a/b":{"c~d":[1,{"e":"x"}]},"k":1,"k":"last"})", "t.json",
                                 {1 << 20, 8});
  REQUIRE(doc.ok());
  const JsonValue root = doc->root();
  CHECK(root.Pointer().empty());
  CHECK(root.Error("bad").message() == "t.json: /: bad");
  auto ab = root.Field("a/b");
  REQUIRE(ab.ok());
  auto cd = ab->Field("c~d");
  REQUIRE(cd.ok());
  CHECK(cd->Pointer() == "/a~1b/c~0d");
  int seen = 0;
  const absl::Status status = cd->ForEachElement([&](const JsonValue& item) -> absl::Status {
    ++seen;
    if (!item.is_object()) return absl::OkStatus();
    auto e = item.StringField("e", false);
    REQUIRE(e.ok());
    CHECK(*e == "x");
    return item.Field("missing").status();
  });
  CHECK(seen == 2);
  CHECK(status.message() == "t.json: /a~1b/c~0d/1: missing required field \"missing\"");
  CHECK(ab->ErrorAt(3, "x").message() == "t.json: /a~1b/3: x");
  // A repeated key: the last value, as a parser building a map keeps it.
  auto k = root.Field("k");
  REQUIRE(k.ok());
  REQUIRE(k->is_string());
  CHECK(k->string() == "last");
  auto wrong = root.StringField("a/b", false);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message() == "t.json: /a~1b: expected a string, found object");
}

TEST_CASE("Integers keep their 64-bit value and sign", "[json]") {
  auto doc = JsonDocument::Parse("[1, -1, 18446744073709551615, 1.0]", "t.json", {1 << 20, 8});
  REQUIRE(doc.ok());
  std::vector<std::tuple<bool, bool, std::string>> seen;
  REQUIRE(doc->root()
              .ForEachElement([&](const JsonValue& v) {
                seen.emplace_back(v.is_integer(), v.is_unsigned(), v.Dump());
                return absl::OkStatus();
              })
              .ok());
  REQUIRE(seen.size() == 4);
  CHECK(seen[0] == std::make_tuple(true, false, std::string("1")));
  CHECK(seen[1] == std::make_tuple(true, false, std::string("-1")));
  CHECK(seen[2] == std::make_tuple(true, true, std::string("18446744073709551615")));
  CHECK(std::get<0>(seen[3]) == false);
}

TEST_CASE("A manifest stays valid when copied, moved and its source destroyed", "[manifest][json]") {
  // Paths short enough to live inside their strings (no heap buffer): the
  // lookup tables must not point into a destroyed Manifest.
  auto parsed = semmap::Manifest::Parse(semmap_test::ManifestJson({"a", "a.b", "a.b.0", "c"}),
                                        "m.json");
  REQUIRE(parsed.ok());
  auto check = [](const semmap::Manifest& m) {
    REQUIRE(m.size() == 5);
    CHECK(m.find("a.b.0") == 3);
    CHECK(m.module(m.find("a.b.0")).parent == m.find("a.b"));
    CHECK(m.withVariableName("b.0").size() == 1);
    CHECK(m.find("zz") == semmap::kNoModule);
  };
  auto* original = new semmap::Manifest(*std::move(parsed));
  semmap::Manifest copy(*original);
  semmap::Manifest assigned = semmap::Manifest::FromModulePaths({{"x", ""}});
  assigned = *original;
  semmap::Manifest moved(std::move(*original));
  delete original;
  check(copy);
  check(assigned);
  check(moved);
  semmap::Manifest from_paths = semmap::Manifest::FromModulePaths({{"p.q.r", "t.R"}});
  semmap::Manifest second(from_paths);
  from_paths = semmap::Manifest::FromModulePaths({});
  CHECK(second.find("p.q") != semmap::kNoModule);
  CHECK(second.withVariableName("r").size() == 1);
}

TEST_CASE("A manifest's tensors are found by full name", "[manifest][json]") {
  const std::string text =
      R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},)"
      R"("modules":[{"path":"","class":"M","qualified_class":"t.M","parent":null,"children":["a"],)"
      R"("parameters":[{"name":"w","shape":[2],"dtype":"float32"}],"buffers":[]},)"
      R"({"path":"a","class":"L","qualified_class":"t.L","parent":"","children":[],"parameters":[],)"
      R"("buffers":[{"name":"running_mean","shape":[18446744073709551615],"dtype":"float32"}]}]})";
  // A dimension above INT64_MAX is not a dimension.
  auto bad = semmap::Manifest::Parse(text, "m.json");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()) ==
        "m.json: /modules/1/buffers/0/shape/0: expected a non-negative integer");
  std::string good = text;
  good.replace(good.find("18446744073709551615"), 20, "3");
  auto m = semmap::Manifest::Parse(good, "m.json");
  REQUIRE(m.ok());
  CHECK(m->ownerOfTensor("w") == 0);
  CHECK(m->ownerOfTensor("a.running_mean") == 1);
  CHECK(m->ownerOfTensor("a.w") == semmap::kNoModule);
  CHECK(m->module(1).buffers[0].shape == std::vector<std::int64_t>{3});
}
