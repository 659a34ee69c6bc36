// ModuleTree: the module hierarchy annotated with what the ONNX graph holds.
//
//   semmap::ModuleTree tree = semmap::ModuleTree::Build(*mapper);
//   for (const semmap::TreeModule& m : tree.modules()) {
//     std::cout << std::string(2 * m.depth, ' ') << tree.info(m).path << " "
//               << m.subtree_nodes << " nodes, " << m.subtree_parameters
//               << " parameters\n";
//   }
//
// Per module: nodes mapped to it (own) and to its subtree, an op-type
// histogram of each, and its parameter count from the manifest's parameter
// shapes. Two views:
//   - full: every module of the manifest;
//   - model-specific (TreeOptions::model_specific_only): library leaf
//     modules (no children, and a qualified class the mapper's rule file
//     calls a library module, "library_modules": torch.nn's Linear,
//     LayerNorm, Dropout... by default) are folded into their parent, whose
//     own counts then include theirs. What remains is the model's own
//     architecture.
//
// A ModuleTree is a snapshot: it copies what it needs except the manifest,
// which (with the mapper's other inputs) must outlive it. Immutable after
// Build() and safe to share between threads.
#ifndef SEMMAP_INCLUDE_SEMMAP_TREE_H_
#define SEMMAP_INCLUDE_SEMMAP_TREE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"
#include "semmap/mapping.h"

namespace semmap {

struct SEMMAP_EXPORT TreeOptions {
  // Fold torch.nn leaf modules into their parents (see above).
  bool model_specific_only = false;
  // When set, only nodes for which it returns true are counted: the hook
  // for views restricted to a semantic category, a strategy, a confidence.
  std::function<bool(NodeId, const Mapping&)> node_filter;
  // Bound on the entries of all subtree op-type histograms together, which
  // grow as depth x distinct op types (a deep chain over many op types).
  // Above it the subtree histograms are left empty and
  // ModuleTree::subtreeOpTypesComplete() is false; own histograms hold
  // at most one entry per node and are always filled.
  std::size_t max_op_type_entries = std::size_t{1} << 22;
};

struct SEMMAP_EXPORT TreeModule {
  ModuleId module = kNoModule;
  int parent = -1;            // index into ModuleTree::modules(); -1 for the root
  std::vector<int> children;  // indices into ModuleTree::modules()
  int depth = 0;              // root = 0
  // Nodes mapped to this module or to a module folded into it.
  std::size_t own_nodes = 0;
  std::size_t subtree_nodes = 0;
  // Parameter elements (products of the manifest's parameter shapes); a
  // folded module's parameters count as its parent's own. Sums saturate at
  // INT64_MAX, which then means "at least".
  std::int64_t own_parameters = 0;
  std::int64_t subtree_parameters = 0;
  // Op type ("MatMul", "com.microsoft.Attention" for other domains) -> nodes.
  std::map<std::string, std::size_t> own_op_types;
  std::map<std::string, std::size_t> subtree_op_types;
  // Modules folded into this one (model-specific view), in manifest order.
  std::vector<ModuleId> folded;
};

class SEMMAP_EXPORT ModuleTree {
 public:
  static ModuleTree Build(const SemanticMapper& mapper, const TreeOptions& options = {});

  // Pre-order (children in registration order); modules()[0] is the root.
  const std::vector<TreeModule>& modules() const { return modules_; }
  const TreeModule& root() const { return modules_.front(); }
  // The manifest entry of a tree module.
  ModuleInfo info(const TreeModule& m) const { return manifest_->module(m.module); }
  // Index of the module at `path`, or -1 when unknown or folded away.
  int find(absl::string_view path) const;

  bool modelSpecificOnly() const { return model_specific_only_; }
  // Nodes counted (those passing the filter) and, of them, unmapped ones,
  // which belong to no module.
  std::size_t countedNodes() const { return counted_nodes_; }
  std::size_t unmappedNodes() const { return unmapped_nodes_; }
  // False when the subtree op-type histograms would have exceeded
  // TreeOptions::max_op_type_entries and were left empty.
  bool subtreeOpTypesComplete() const { return subtree_op_types_complete_; }

 private:
  ModuleTree() = default;

  const Manifest* manifest_ = nullptr;
  std::vector<TreeModule> modules_;
  std::vector<int> index_of_module_;  // ModuleId -> index or -1
  bool model_specific_only_ = false;
  std::size_t counted_nodes_ = 0;
  std::size_t unmapped_nodes_ = 0;
  bool subtree_op_types_complete_ = true;
};

// Nodes per module, indexed by ModuleId: mapped to the module itself (own)
// and to it or any module below it (subtree). The one count of nodes per
// module that the tree, the diff, the query and the tools' summaries share.
struct SEMMAP_EXPORT ModuleNodeCounts {
  std::vector<std::size_t> own;
  std::vector<std::size_t> subtree;
  std::size_t counted = 0;   // nodes counted (passing the filter)
  std::size_t unmapped = 0;  // of those, mapped to no module
};

// Counts the nodes of `mapper`'s graph by module of its manifest; with
// `node_filter`, only the nodes for which it returns true. Linear in the
// nodes plus the modules.
SEMMAP_EXPORT ModuleNodeCounts CountModuleNodes(
    const SemanticMapper& mapper,
    const std::function<bool(NodeId, const Mapping&)>& node_filter = nullptr);

// True for a module the model-specific view folds away: a module without
// children whose class `rules` call a library module ("library_modules").
SEMMAP_EXPORT bool IsLibraryLeaf(const ModuleInfo& info, const Rules& rules = Rules::Default());

// "MatMul", or "<domain>.<op>" outside the default ONNX domain.
SEMMAP_EXPORT std::string QualifiedOpType(const Node& node);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_TREE_H_
