// The library's streamed JSON (src/io/json_writer.h) is what nlohmann's
// dump(2) writes, and bytes that are not UTF-8 never throw.
#include <sstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "io/json_writer.h"
#include "nlohmann/json.hpp"

namespace {

using semmap::internal::AppendJsonString;

// nlohmann's dump, bytes that are not UTF-8 replaced: what the writer matches.
std::string DumpJson(const nlohmann::json& value, int indent = 2) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

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

}  // namespace

namespace {

using semmap::internal::AppendJsonNumber;
using semmap::internal::JsonWriter;

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

// `value` as its dump(indent) writes it nested `depth` levels deep in a
// container: every line after the first indented indent * depth more.
std::string Nested(const nlohmann::json& value, int depth, int indent) {
  std::string out;
  for (char c : DumpJson(value, indent)) {
    out.push_back(c);
    if (c == '\n') out.append(static_cast<std::size_t>(indent * depth), ' ');
  }
  return out;
}

TEST_CASE("A document written value by value reads as its dump at any depth",
          "[json_writer]") {
  const std::string bad = "bad\xffname";
  const nlohmann::json value = {
      {"a", "x\"y"},
      {"b", 0.95},
      {"c", nullptr},
      {"d", bad},
      {"e", ""},
      {"f", 18446744073709551615ULL},
      {"g", 0u},
      {"h", -12},
      {"i", true},
      {"j", {"one", "two"}},
      {"k", nlohmann::json::array()},
      {"l", nlohmann::json::object()},
      {"m", {{{"n", 1}, {"o", {1.5, false}}}, nlohmann::json::object()}}};
  for (int depth = 0; depth < 3; ++depth) {
    CAPTURE(depth);
    for (int indent : {2, 1, 0, JsonWriter::kCompact}) {
      CAPTURE(indent);
      std::string text;
      JsonWriter w(&text, depth, indent);
      w.BeginObject();  // keys in sorted order, as nlohmann keeps them
      w.Key("a").String("x\"y");
      w.Key("b").Number(0.95);
      w.Key("c").Null();
      w.Key("d").String(bad);
      w.Key("e").String("");
      w.Key("f").Integer(18446744073709551615ULL);
      w.Key("g").Unsigned(0);
      w.Key("h").Integer(-12);
      w.Key("i").Bool(true);
      w.Key("j").Strings(std::vector<std::string>{"one", "two"});
      w.Key("k").Strings(std::vector<absl::string_view>{});
      w.Key("l").BeginObject();
      w.EndObject();
      w.Key("m").BeginArray();
      w.BeginObject();
      w.Key("n").Integer(1);
      w.Key("o").BeginArray();
      w.Number(1.5);
      w.Bool(false);
      w.EndArray();
      w.EndObject();
      w.BeginObject();
      w.EndObject();
      w.EndArray();
      w.EndObject();
      CHECK(text == (indent < 0 ? DumpJson(value, -1) : Nested(value, depth, indent)));
    }
    std::string empty;
    JsonWriter none(&empty, depth);
    none.BeginArray();
    none.EndArray();
    CHECK(empty == "[]");
  }
}

}  // namespace
