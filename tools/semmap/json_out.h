// Streaming pieces of the tool's JSON output, written exactly as
// nlohmann::json's dump(2) writes them, for lists that grow with the model
// (a DOM of 10^5 objects costs more than the mapping it reports).
#ifndef SEMMAP_TOOLS_SEMMAP_JSON_OUT_H_
#define SEMMAP_TOOLS_SEMMAP_JSON_OUT_H_

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace semmap_cli {

// The tool's JSON: `value.dump(2)`, with bytes that are not UTF-8 (a file
// name in another encoding) written as U+FFFD instead of an exception.
std::string DumpJson(const nlohmann::json& value, int indent = 2);

// Appends `s` as a JSON string, as DumpJson writes it (quotes, nlohmann's
// escapes, UTF-8 passed through).
void AppendJsonString(absl::string_view s, std::string* out);

// Appends DumpJson(value) with every line after the first indented by
// `indent` more spaces: a value nested `indent / 2` levels deep in a
// dump(2) of its container.
void AppendIndentedJson(const nlohmann::json& value, int indent, std::string* out);

// Writes to `out`, as DumpJson would write `head` with `list_key` added
// (keys in order), an object whose list of `count` items is made and
// written one item at a time: `item(i)` for each.
void WriteJsonWithList(std::ostream& out, const nlohmann::json& head,
                       const std::string& list_key, std::size_t count,
                       const std::function<nlohmann::json(std::size_t)>& item);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_JSON_OUT_H_
