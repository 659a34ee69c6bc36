// Diff: how two ONNX exports of the same model differ, module by module.
//
//   absl::StatusOr<semmap::ModelDiff> d = semmap::DiffModels(*mapper_a, *mapper_b);
//   if (!d.ok()) { std::cerr << d.status() << "\n"; return 2; }  // unrelated models
//   for (const semmap::FusionGroup& f : d->fusions) ...
//
// Both models are mapped first (each with its manifest, or one manifest for
// both); the diff then compares them through their module paths:
//   - per module, the nodes mapped to it (own) and to its subtree, and the
//     op-type histogram of its own nodes, in A and in B;
//   - nodes present in both (same node key, below) whose module differs:
//     moved;
//   - nodes only in B ("fused": an optimizer's EmbedLayerNormalization,
//     Attention, SkipLayerNormalization...), grouped by their module, each
//     group with the nodes only in A that it replaced: those mapped into
//     the group's module subtree. An A-only node under several groups'
//     modules goes to the deepest one; A-only nodes under none are
//     `removed` (constant folding, dead code).
//
// Node key. Nodes are matched across the two files by name: a node's key
// is its name when that is non-empty and unique in its model, otherwise
// "<op_type>-><first output>" (value names are unique in a graph, and
// optimizers keep the output names of the nodes they leave alone). Graph's
// "<name>#<index>" ids would pair unrelated unnamed nodes by position.
//
// Related models. Comparing two unrelated models gives noise, so DiffModels
// refuses (FailedPrecondition) when
//   - both mappers have a manifest and their model classes differ; or
//   - fewer than DiffOptions::min_module_overlap (10 %) of the non-root
//     modules that hold nodes in A (own or subtree) also hold nodes in B.
// Subtree counts make the rule robust to fusion: an optimizer that folds
// every Linear of an attention block into one Attention node still leaves
// nodes under the block and its ancestors, while a model mapped against
// another model's manifest leaves almost nothing.
//
// Lifetime: the result copies what it needs; the mappers may go away.
// Thread-safe: the mappers are only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_DIFF_H_
#define SEMMAP_INCLUDE_SEMMAP_DIFF_H_

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "semmap/export.h"
#include "semmap/mapper.h"

namespace semmap {

struct SEMMAP_EXPORT DiffOptions {
  // Share of A's node-holding non-root modules that must hold nodes in B.
  double min_module_overlap = 0.10;
  // Refuse manifests of different model classes.
  bool require_same_model_class = true;
};

// One node of A or B as the diff reports it.
struct SEMMAP_EXPORT DiffNode {
  std::string key;      // see "Node key" above
  std::string name;
  std::string op_type;  // QualifiedOpType(): "com.microsoft.Attention"
  std::string module;   // mapped module path; "" when unmapped
  bool mapped = false;
  double confidence = 0.0;
};

// A module that holds nodes in A or in B.
struct SEMMAP_EXPORT ModuleDelta {
  std::string path;        // "" for the root
  std::string class_name;  // from A's manifest, else B's
  std::size_t own_a = 0, own_b = 0;
  std::size_t subtree_a = 0, subtree_b = 0;
  std::map<std::string, std::size_t> ops_a, ops_b;  // own nodes by op type
  bool changed() const { return ops_a != ops_b; }
};

// A node present in both models whose module differs.
struct SEMMAP_EXPORT MovedNode {
  DiffNode a;
  DiffNode b;
};

// Nodes only in B mapped to one module, and the A-only nodes they replaced.
struct SEMMAP_EXPORT FusionGroup {
  std::string module;  // "" with mapped == false for unmapped B-only nodes
  bool mapped = true;
  std::vector<DiffNode> fused;     // in B's node order
  std::vector<DiffNode> replaced;  // in A's node order
};

struct SEMMAP_EXPORT ModelDiff {
  std::string model_class_a, model_class_b;
  std::size_t nodes_a = 0, nodes_b = 0;
  std::size_t common_nodes = 0;  // keys present in both
  // Share of A's node-holding non-root modules holding nodes in B.
  double module_overlap = 0.0;
  // Modules with nodes in A or B: A's manifest order, then B-only paths.
  std::vector<ModuleDelta> modules;
  std::vector<MovedNode> moved;       // in A's node order
  std::vector<FusionGroup> fusions;   // mapped groups by module path, unmapped last
  std::vector<DiffNode> removed;      // A-only nodes under no fusion group
};

// Compares the models of two mappers. FailedPrecondition when the models
// look unrelated (see above; the message gives the classes or the overlap).
SEMMAP_EXPORT absl::StatusOr<ModelDiff> DiffModels(const SemanticMapper& a, const SemanticMapper& b,
                                                   const DiffOptions& options = {});

// The diff as JSON: {"format": "semmap.diff", "a": {...}, "b": {...},
// "module_overlap", "common_nodes", "modules": [...] (changed modules
// only unless `all_modules`), "moved", "fusions", "removed"}.
SEMMAP_EXPORT std::string ModelDiffJson(const ModelDiff& diff, bool all_modules = false,
                                        int indent = 2);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_DIFF_H_
