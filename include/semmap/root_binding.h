// RootBinding: where the ONNX root scope sits in the manifest
// (SemanticMapper::rootBinding(), mapper.h).
#ifndef SEMMAP_INCLUDE_SEMMAP_ROOT_BINDING_H_
#define SEMMAP_INCLUDE_SEMMAP_ROOT_BINDING_H_

#include <cstddef>
#include <string>
#include <vector>

#include "semmap/export.h"
#include "semmap/manifest.h"

namespace semmap {

// How the ONNX root scope was matched to the manifest.
struct SEMMAP_EXPORT RootBinding {
  ModuleId root = 0;                 // manifest module the ONNX root maps to
  std::vector<std::string> wrapper;  // leading ONNX segments outside the manifest
  std::size_t scoped_nodes = 0;      // nodes with a scoped name
  std::size_t resolved_nodes = 0;    // of those, fully resolved under this binding
  std::size_t indirect_steps = 0;    // resolution steps that skipped modules
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_ROOT_BINDING_H_
