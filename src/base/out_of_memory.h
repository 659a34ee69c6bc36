// Running out of memory at the library boundary. Public entry points that
// allocate in proportion to their input end in a function-try-block:
//
//   absl::StatusOr<Graph> Graph::Parse(...) try {
//     ...
//   } catch (const std::bad_alloc&) {
//     return internal::OutOfMemory(origin, "loading the model");
//   }
//
// so std::bad_alloc (and the std::length_error of a container asked for
// more than it can hold) becomes ResourceExhausted instead of escaping.
// Limits (GraphOptions, ManifestOptions) bound memory for inputs within
// them; this covers a machine with less memory than they allow.
#ifndef SEMMAP_SRC_BASE_OUT_OF_MEMORY_H_
#define SEMMAP_SRC_BASE_OUT_OF_MEMORY_H_

#include <new>
#include <stdexcept>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

inline absl::Status OutOfMemory(absl::string_view origin, absl::string_view what) {
  return absl::ResourceExhaustedError(
      absl::StrCat(origin, ": out of memory while ", what,
                   "; lower the limits or give the process more memory"));
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_OUT_OF_MEMORY_H_
