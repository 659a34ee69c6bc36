// semmap's JSON writer: JsonWriter writes every document of the library
// (docs/development.md, "Where JSON is written") value by value, exactly as
// nlohmann::json's dump writes it, so that lists growing with the model are
// streamed instead of built as a DOM (10^5 objects cost more than the
// mapping they report). nlohmann::json stays behind it, for the escapes of
// strings and the digits of numbers only.
#ifndef SEMMAP_SRC_IO_JSON_WRITER_H_
#define SEMMAP_SRC_IO_JSON_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace semmap {
namespace internal {

// Appends `s` as a JSON string, as nlohmann::json's dump writes it (quotes,
// its escapes, UTF-8 passed through, bytes that are not UTF-8 written as
// U+FFFD instead of an exception).
void AppendJsonString(absl::string_view s, std::string* out);

// Appends `value` as nlohmann::json's dump writes a number (its shortest
// form, "0.0" for zero).
void AppendJsonNumber(double value, std::string* out);

// Appends a JSON document (or a value nested `depth` levels deep in one)
// value by value, exactly as nlohmann::json writes it: as dump(indent) does,
// with `indent` spaces per level (2 by default), or on one line as dump(-1)
// when `indent` is kCompact. Objects' keys must come in sorted order, as
// nlohmann::json keeps them. Nothing is checked: each Begin needs its End,
// each member of an object a Key then one value.
//
//   JsonWriter w(&text);
//   w.BeginObject();
//   w.Key("count").Unsigned(2);
//   w.Key("model").String(path);
//   w.EndObject();
class JsonWriter {
 public:
  static constexpr int kCompact = -1;

  explicit JsonWriter(std::string* out, int depth = 0, int indent = 2)
      : out_(out), depth_(depth), indent_(indent) {}

  // The next value is the member `key` of the open object.
  JsonWriter& Key(absl::string_view key);
  void String(absl::string_view value);
  void Number(double value);
  void Unsigned(std::uint64_t value);
  void Signed(std::int64_t value);
  // Any integer type: Signed or Unsigned by its signedness.
  template <typename T>
  void Integer(T value) {
    if constexpr (std::is_signed<T>::value) {
      Signed(static_cast<std::int64_t>(value));
    } else {
      Unsigned(static_cast<std::uint64_t>(value));
    }
  }
  void Bool(bool value);
  void Null();
  // A string, or null when `value` is empty (a path not given).
  void StringOrNull(absl::string_view value);
  // An array of strings.
  void Strings(absl::Span<const std::string> values);
  void Strings(absl::Span<const absl::string_view> values);
  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }

  std::string* text() { return out_; }

 private:
  void Value();  // what goes before a value: a separator and indent in an array
  void Open(char bracket);
  void Close(char bracket);
  void NewLine(int depth);

  std::string* out_;
  int depth_;
  int indent_;  // spaces per level; kCompact (< 0): one line
  bool after_key_ = false;
  // Per open container: whether it has no member yet.
  absl::InlinedVector<bool, 8> empty_;
};

// Writes `text` to `out` and empties it once it holds a megabyte: a list is
// written as it grows instead of whole at the end.
void FlushLarge(std::ostream& out, std::string* text);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_JSON_WRITER_H_
