// A nesting guard: JSON nested deeper than a limit is refused before a
// recursive parser sees it (truth files), and the JSON reader
// (json_reader.h) names the byte where its own limit was crossed.
#ifndef SEMMAP_SRC_IO_JSON_NESTING_H_
#define SEMMAP_SRC_IO_JSON_NESTING_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// InvalidArgument naming `origin` and the byte offset when `[`/`{` nesting
// outside strings exceeds `max_depth`.
absl::Status CheckJsonNesting(absl::string_view text, int max_depth,
                              absl::string_view origin);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_JSON_NESTING_H_
