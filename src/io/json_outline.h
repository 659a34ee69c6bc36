// The outline of a JSON object too large to hold as one document: the byte
// ranges of its top-level members and of each element of one array member,
// found in one pass without building values, so that a reader can parse the
// small rest and then each element alone (manifest_reader.cc).
//
// The outline checks the structure it walks through: the top-level object,
// the array's brackets and the separators between members and elements,
// and the `[`/`{` nesting of the whole text against a limit (as
// CheckJsonNesting counts it, json_nesting.h). The values inside the ranges
// are only delimited (strings skipped, brackets counted): parsing each range
// as a JSON value checks them, and a text whose outline holds and whose
// ranges all parse is valid JSON. Anything else (a syntax error, a key
// written with escapes, the array key twice or missing, the member not an
// array) gives no outline: the caller parses the whole text instead, which
// words every error.
#ifndef SEMMAP_SRC_IO_JSON_OUTLINE_H_
#define SEMMAP_SRC_IO_JSON_OUTLINE_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

struct JsonRange {
  std::size_t begin;
  std::size_t end;  // one past the value's last byte
};

struct JsonOutline {
  // The top-level object's members, in file order: the value's range.
  struct Member {
    absl::string_view key;  // the key's bytes (written without escapes)
    JsonRange value;
  };
  std::vector<Member> members;
  std::size_t array_member = 0;     // index in members of the array
  std::vector<JsonRange> elements;  // the array's elements, in order
};

// The outline of `text`, a JSON object holding the array member `array_key`
// once; nullopt when there is none (see above). `progress(n)` is called now
// and then with a byte count n below which the pass reads no more, so that
// the caller can let those pages go.
std::optional<JsonOutline> OutlineJson(absl::string_view text, absl::string_view array_key,
                                       int max_depth,
                                       absl::FunctionRef<void(std::size_t)> progress);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_JSON_OUTLINE_H_
