// Node names a tool built by extending another node's name.
#ifndef SEMMAP_SRC_MAPPING_CORE_NAME_FAMILY_H_
#define SEMMAP_SRC_MAPPING_CORE_NAME_FAMILY_H_

#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// Names are looked at this long at most, cut at this many '_' from the end:
// the work per name stays linear (a hostile 16 MB name is skipped).
inline constexpr std::size_t kMaxFamilyName = 1024;
inline constexpr int kMaxFamilyCuts = 8;

// The name of the node `name` derives from: its longest prefix ending
// before a '_' that `is_node(prefix)` says names a node, as a quantizer
// names the nodes it adds after the node they serve
// ("node_MatMul_55_quant", then "node_MatMul_55_quant_scales_mul"). A name
// ending in a digit numbers another instance ("node_linear_4", ONNX
// Runtime's "Transpose_token_5") and derives from none. Empty when none.
template <typename IsNode>
absl::string_view DerivedFrom(absl::string_view name, IsNode&& is_node) {
  if (name.empty() || name.size() > kMaxFamilyName ||
      absl::ascii_isdigit(static_cast<unsigned char>(name.back()))) {
    return {};
  }
  int tries = 0;
  for (std::size_t cut = name.rfind('_'); cut != absl::string_view::npos && cut > 0 &&
                                          tries++ < kMaxFamilyCuts;
       cut = name.rfind('_', cut - 1)) {
    // "_4" numbers another call of the same op ("node_linear_4" does not
    // derive from "node_linear").
    if (absl::ascii_isdigit(static_cast<unsigned char>(name[cut + 1]))) continue;
    if (is_node(name.substr(0, cut))) return name.substr(0, cut);
  }
  return {};
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_NAME_FAMILY_H_
