// Streaming pieces of semmap's JSON documents (semmap/results_json.h),
// written exactly as nlohmann::json's dump(2) writes them, for lists that
// grow with the model (a DOM of 10^5 objects costs more than the mapping it
// reports).
#ifndef SEMMAP_SRC_IO_JSON_WRITER_H_
#define SEMMAP_SRC_IO_JSON_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"

namespace semmap {
namespace internal {

// semmap's JSON: `value.dump(2)`, with bytes that are not UTF-8 (a file
// name in another encoding) written as U+FFFD instead of an exception.
std::string DumpJson(const nlohmann::json& value, int indent = 2);

// Appends `s` as a JSON string, as DumpJson writes it (quotes, nlohmann's
// escapes, UTF-8 passed through).
void AppendJsonString(absl::string_view s, std::string* out);

// Appends DumpJson(value) with every line after the first indented by
// `indent` more spaces: a value nested `indent / 2` levels deep in a
// dump(2) of its container.
void AppendIndentedJson(const nlohmann::json& value, int indent, std::string* out);

// Appends `value` as DumpJson writes a number (nlohmann's shortest form,
// "0.0" for zero).
void AppendJsonNumber(double value, std::string* out);

// Appends a JSON object member by member, as DumpJson writes it nested
// `indent` spaces deep (the object's own line starts there): the keys must
// come in sorted order, as nlohmann::json keeps them. Close() ends it.
class JsonObjectText {
 public:
  JsonObjectText(int indent, std::string* out) : indent_(indent), out_(out) {}
  void String(absl::string_view key, absl::string_view value);
  void Number(absl::string_view key, double value);
  void Unsigned(absl::string_view key, std::uint64_t value);
  void Null(absl::string_view key);
  // An array of strings, one per line as nlohmann::json's dump(2) writes it.
  void Strings(absl::string_view key, absl::Span<const absl::string_view> values);
  void Close();

 private:
  void Key(absl::string_view key);
  int indent_;
  std::string* out_;
  bool empty_ = true;
};

// Writes `text` to `out` and empties it once it holds a megabyte: a list is
// written as it grows instead of whole at the end.
void FlushLarge(std::ostream& out, std::string* text);

// Writes to `out`, as DumpJson would write `head` with `list_key` added
// (keys in order), an object whose list of `count` items is made and
// written one item at a time: `item(i, text)` appends item i to `text`, as
// DumpJson writes it two levels deep (JsonObjectText with indent 4).
void WriteJsonWithList(std::ostream& out, const nlohmann::json& head,
                       const std::string& list_key, std::size_t count,
                       const std::function<void(std::size_t, std::string*)>& item);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_JSON_WRITER_H_
