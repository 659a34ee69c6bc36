// OriginTable: for the few nodes that do the work of several modules (a
// Conv with its BatchNorm folded in, an ONNX Runtime fusion), the modules
// whose operations they perform (SemanticMapper::originsOf). Sparse: most
// nodes have none, and a node of one module has none.
#ifndef SEMMAP_SRC_MAPPING_ORIGIN_TABLE_H_
#define SEMMAP_SRC_MAPPING_ORIGIN_TABLE_H_

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {

class OriginTable {
 public:
  // Records `modules` as the origins of `node`, sorted (manifest order) and
  // without repeats; fewer than two distinct modules clears them.
  void Set(NodeId node, std::vector<ModuleId> modules);
  void Clear(NodeId node) { table_.erase(node); }
  // Empty when the node does the work of one module.
  absl::Span<const ModuleId> Of(NodeId node) const;
  std::size_t size() const { return table_.size(); }

 private:
  absl::flat_hash_map<NodeId, std::vector<ModuleId>> table_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_ORIGIN_TABLE_H_
