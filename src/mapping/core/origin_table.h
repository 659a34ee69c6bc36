// OriginTable: for the few nodes that do the work of several modules (a
// Conv with its BatchNorm folded in, an ONNX Runtime fusion), the modules
// whose operations they perform (SemanticMapper::originsOf). Sparse: most
// nodes have none, and a node of one module has none.
#ifndef SEMMAP_SRC_MAPPING_CORE_ORIGIN_TABLE_H_
#define SEMMAP_SRC_MAPPING_CORE_ORIGIN_TABLE_H_

#include <cstdint>
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
  // without repeats; fewer than two distinct modules clears them. With
  // `counted`, `modules` lists one entry per node of the export the node
  // replaced, and how many each origin had is kept as its share (Shares).
  void Set(NodeId node, std::vector<ModuleId> modules, bool counted = false);
  void Clear(NodeId node) { table_.erase(node); }
  // Empty when the node does the work of one module.
  absl::Span<const ModuleId> Of(NodeId node) const;
  // Parallel to Of(): the export's nodes each origin's part replaced; empty
  // when not known (an exporter's fold, a tensor name).
  absl::Span<const std::uint32_t> Shares(NodeId node) const;
  std::size_t size() const { return table_.size(); }

 private:
  struct Entry {
    std::vector<ModuleId> modules;
    std::vector<std::uint32_t> shares;
  };
  absl::flat_hash_map<NodeId, Entry> table_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_ORIGIN_TABLE_H_
