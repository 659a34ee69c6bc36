// Quoting untrusted text in messages.
#ifndef SEMMAP_SRC_BASE_TEXT_H_
#define SEMMAP_SRC_BASE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// Returns `text` shortened to at most `max` bytes with an ellipsis, for
// quoting untrusted names in messages.
std::string Abbreviate(absl::string_view text, std::size_t max = 120);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_TEXT_H_
