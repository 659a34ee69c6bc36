// The dotted atoms of a module path ("bert.encoder.layer.0"), as the
// manifest and the queries over it read them.
#ifndef SEMMAP_SRC_MANIFEST_MODULE_PATH_H_
#define SEMMAP_SRC_MANIFEST_MODULE_PATH_H_

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// The text after the path's last '.', the whole path when it has none:
// "bert.encoder.layer.0" -> "0", "bert" -> "bert", "" -> "".
inline absl::string_view LastAtom(absl::string_view path) {
  const std::size_t dot = path.rfind('.');
  return dot == absl::string_view::npos ? path : path.substr(dot + 1);
}

// True for a non-empty atom of ASCII digits only (a ModuleList index).
inline bool IsNumericAtom(absl::string_view atom) {
  return !atom.empty() && std::all_of(atom.begin(), atom.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_MODULE_PATH_H_
