// Shared by the manifest's reader (manifest_reader.cc) and its other
// constructors (manifest.cc): what a module's children say of it.
#ifndef SEMMAP_SRC_MANIFEST_MODULE_TREE_H_
#define SEMMAP_SRC_MANIFEST_MODULE_TREE_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {

// A path atom of digits only ("3" of "layer.3").
bool IsNumericAtom(absl::string_view atom);

// Sets ModuleInfo::numbered_children once the children are linked.
void MarkNumberedChildren(std::vector<ModuleInfo>* modules);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_MODULE_TREE_H_
