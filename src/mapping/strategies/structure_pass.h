// The structural strategy (structure.h) as one pass over a chosen node
// order, in the phases InferFromStructure runs: the order (the file's, the
// exporter's creation counters, or a re-linearisation; structure_order.cc),
// unnamed weights aligned with the manifest's parameters
// (structure_align.cc), then the gaps between anchored nodes: forward
// signatures, heads, tails, module-op regions and intervals
// (structure_gaps.cc). The pass itself and its tuning are here.
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_STRUCTURE_PASS_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_STRUCTURE_PASS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mapping/core/confidence.h"
#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_context.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/tensor_evidence.h"
#include "mapping/core/weight_shapes.h"
#include "mapping/strategies/forward_signature.h"
#include "mapping/strategies/op_calls.h"
#include "mapping/strategies/structure.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {
namespace structure {

// Confidence of each rule (mapping/core/confidence.h).
using confidence::structure::kAlignedWeight;
using confidence::structure::kHead;
using confidence::structure::kSignature;
using confidence::structure::kNameFamily;
using confidence::structure::kTail;
using confidence::structure::kModuleOps;
using confidence::structure::kInterval;
using confidence::structure::kLca;
using confidence::structure::kOnlyRunner;
using confidence::structure::kDisorderFactor;

// The pass's tuning.
// Available() looks through at most this many consumers of one value.
inline constexpr std::size_t kMaxConsumerScan = 256;
// When the anchors' order disagrees with the manifest's module order (a
// re-sorted graph), order-based answers are worth less (kDisorderFactor).
// Registration order differs from execution order in many models (CLIP's
// towers, Whisper's encoder and decoder: 0.6 in their exports' own order),
// so only a clearly worse agreement means a re-sorted graph.
inline constexpr double kOrderAgreementFloor = 0.5;
// The re-linearised order replaces the file's only when clearly better.
inline constexpr double kRelinearisedMargin = 0.04;
// How far ahead of the first unmatched parameter an unnamed weight may
// match: absorbs parameters that the export dropped or fused.
inline constexpr std::size_t kAlignWindow = 32;
inline constexpr int kMaxPassthrough = 4;
// The most calls of the expanded signatures a gap between two placed nodes
// is matched with (the alignment's table grows with it), and the calls all
// such gaps of one pass may copy: this many per graph node, beside
// kMaxPlacedGap.
inline constexpr std::size_t kMaxPlacedGap = 4096;
inline constexpr std::size_t kPlacedCallsPerNode = 16;
// Without names, an alignment confirms the manifest by itself with at least
// this many weights of at least this many shapes (Alignment::Confirms).
inline constexpr std::size_t kMinConfirmingWeights = 8;
inline constexpr std::size_t kMinConfirmingShapes = 3;
// At least one node in this many must carry a creation counter in its name
// for the names to give the order (CreationOrder).
inline constexpr std::size_t kMinKeyedShare = 5;

class Pass {
 public:
  // Reads the context, writes `mappings` (the context's records, or a copy
  // of them for the second order tried) and the context's evidence.
  // `places`: where PlaceOpCalls put nodes in the expanded signatures, or
  // nullptr.
  Pass(const MappingContext& context, const std::vector<bool>& shape,
       std::vector<MappingRecord>* mappings, const OpCallPlaces* places = nullptr);

  // With `creation_order`, the nodes are ordered by the exporter's creation
  // counters where names carry them (CreationOrder); else as in the file.
  StructureCounts Run(bool creation_order);

  // The share of consecutive nodes with a place (PlaceOpCalls) that the
  // order Run() used keeps in the places' order; -1 without two of them.
  double FollowsPlaces() const;
  // The data-flow edges the order Run() used runs backwards: a node before
  // its producer (an order by creation counters puts a node a tool or the
  // exporter's optimizer rebuilt after the nodes it feeds).
  std::size_t EdgesAgainstOrder() const;

 private:
  std::vector<NodeId> FileOrder() const;

  bool Candidate(NodeId i) const;

  void Assign(NodeId i, ModuleId module, double confidence, std::string evidence);

  // The structure is read against the manifest only when the graph's
  // initializer names show it is this model's: enough of the manifest's
  // parameters are named by an initializer. Another model's manifest of
  // similar shapes must not be "aligned" into a confident-looking answer.
  bool ManifestFits() const;

  // --- Step 1: unnamed weights aligned with unclaimed parameters. ---

  // The rank >= 2 initializer node `i` reads directly or through
  // pass-through ops, when no parameter is named after it; else nullptr.
  // `as_stored`: whether it reaches `i` in its stored layout (directly, or
  // only through quantize, dequantize and cast nodes).
  const TensorInfo* UnnamedWeight(NodeId i, bool* as_stored = nullptr) const;

  // With signatures: expands the root forward into calls_ (ExpandRoot;
  // false where it fails) and finds the initializers named after an op
  // call's result (the dynamo exporter names the value of the k-th call of
  // an op <op>_<k>, and a tool that folds the call keeps that name), with
  // the index of that call in calls_. They are results, not parameters: no
  // unnamed weight.
  bool FindFoldedResults();

  // Whether node i's unnamed `weight` may be the parameter of `shape`: the
  // same dims or transposed (Compatible), or packed in blocks by a
  // blockwise-quantized op (BlockwiseCompatible).
  bool Fits(NodeId i, const TensorInfo& weight, absl::Span<const std::int64_t> shape) const;

  // The module every consumer of the node's outputs is anchored in (a
  // MatMul's bias Add names its Linear), or kNoModule.
  ModuleId ConsumersModule(NodeId i) const;

  // The first unused parameter of `module` node i's unnamed `weight` fits,
  // or params.size(); `by_module` lists the indices of `params` sorted by
  // module.
  template <typename Params>
  std::size_t ParamOf(const Params& params, const std::vector<std::size_t>& by_module,
                      const std::vector<bool>& used, ModuleId module, NodeId i,
                      const TensorInfo& weight) const;

  // The unused parameter node i's unnamed `weight` aligns with in a window
  // of `params`' order (kAlignWindow), or params.size(): searched from
  // the subtree of `last_named`'s parent (the last module a node's own scope
  // or metadata named before i), then from `first_unused`; in each window,
  // with `transposed` (a MatMul reading its weight in the stored [in, out]
  // layout: rules "transposed_weight_ops"), the parameter it is the
  // transpose of comes first. `subtree_first`: per module, the first index
  // of `params` in its subtree (npos: none), when `params` is in the
  // forward's order; empty when it is in the manifest's.
  template <typename Params>
  std::size_t WindowMatch(const Params& params, const std::vector<std::size_t>& subtree_first,
                          const std::vector<bool>& used, std::size_t first_unused,
                          ModuleId last_named, NodeId i, const TensorInfo& weight,
                          bool transposed) const;

  // What an alignment of unnamed weights found, to judge it on its own.
  struct Alignment {
    std::size_t weights = 0;     // distinct unnamed weights read
    std::size_t aligned = 0;     // of them, aligned with a parameter
    std::size_t parameters = 0;  // unclaimed matrix parameters of the manifest
    absl::flat_hash_set<std::vector<std::int64_t>> shapes;  // of the aligned

    // A long run of varied shapes found in the manifest's order is this
    // model's: nearly every unnamed weight aligned, most of the manifest's
    // matrix parameters used, several distinct shapes. A few weights, or
    // many of one shape, could align with any manifest of that layer.
    bool Confirms() const {
      return aligned >= kMinConfirmingWeights && aligned * 10 >= weights * 9 &&
             aligned * 4 >= parameters * 3 && shapes.size() >= kMinConfirmingShapes;
    }
  };

  // Step 1. With `alignment`, also counts what it found. In named steps:
  // the parameters accounted for (ClaimedParameters), the others in order
  // (UnclaimedParameters), the weights of mapped readers
  // (TakeMappedReadersWeights), then each unmapped reader's weight in the
  // chosen order (MatchUnnamedWeight).
  std::size_t AlignUnnamedWeights(Alignment* alignment);

  // Parameters by module and local name; names view the graph's and the
  // manifest's strings.
  using Claimed = absl::flat_hash_set<std::pair<ModuleId, absl::string_view>>;
  // The parameters an initializer is named after, a tied tensor's reader
  // stands for (ClaimTiedParameters), or a call a tool folded read. Sets
  // `*expanded` to FindFoldedResults().
  Claimed ClaimedParameters(bool* expanded);
  void ClaimTiedParameters(Claimed* claimed) const;

  // An unclaimed matrix parameter of the manifest.
  struct Param {
    ModuleId module;
    const TensorSpec* spec;
  };
  // The parameters unnamed weights may align with, and what the alignment
  // took of them.
  struct ParamTable {
    // In the manifest's order or, `expanded`, the forward's first reads'.
    std::vector<Param> params;
    std::vector<std::size_t> subtree_first;  // WindowMatch's; empty unless expanded
    std::vector<std::size_t> by_module;      // ParamOf's
    std::vector<bool> used;
    // Per unnamed weight (initializer name), the parameter it took.
    absl::flat_hash_map<absl::string_view, std::size_t> by_initializer;
  };
  // The manifest's matrix parameters not `claimed`, in order (`expanded`:
  // with the expanded root forward in calls_).
  ParamTable UnclaimedParameters(const Claimed& claimed, bool expanded) const;
  // Each mapped node's unnamed weight takes its module's parameter of that
  // shape, first; with `alignment`, counted as aligned.
  void TakeMappedReadersWeights(ParamTable* table, Alignment* alignment) const;
  // The parameter unmapped node i's unnamed `weight` aligns with: the one
  // it took before, else one of the module its consumers are anchored in
  // (ConsumersModule), else a window's (WindowMatch, from `*first_unused`
  // or `last_named`'s subtree; `as_stored`: see UnnamedWeight), marked
  // used; params.size() when none.
  std::size_t MatchUnnamedWeight(ParamTable* table, NodeId i, const TensorInfo& weight,
                                 bool as_stored, ModuleId last_named,
                                 std::size_t* first_unused) const;

  // Nodes a tool derived from another by extending its name
  // ("node_MatMul_55_quant", "node_MatMul_55_quant_scales_mul" from the
  // quantizer's "node_MatMul_55_quant") belong with the node named by the
  // longest such prefix, once that one is mapped.
  void NameFamilies();

  // --- Step 2: execution order. ---

  // Share of consecutive anchors (of different modules) whose modules come
  // in manifest order, or leave the previous module's subtree for a later
  // one. 1 for an export in execution order; lower for a re-sorted graph.
  double OrderAgreement() const;

  // The file's order, or, when enough names carry an exporter's creation
  // counter (rules "order_keys"), the nodes sorted by that counter; a node
  // without one sorts right after the latest of its producers, or, with
  // `weight_counters`, after the latest counter of the weights it reads when
  // their names carry one (the weights the exporter made: transposed
  // matrices). The forward signatures place those readers by their calls,
  // so the weights' counters serve only manifests without signatures.
  std::vector<NodeId> CreationOrder(bool* used, bool weight_counters) const;

  void SetOrder(std::vector<NodeId> order);

  // Main-graph nodes in the order a forward pass would run them: post-order
  // depth first from the graph outputs, each node's inputs in input order
  // (a node's producer chain right before it). Other graph bodies keep the
  // file's order, after the main graph.
  std::vector<NodeId> DepthFirstOrder() const;

  void BuildBuckets();

  bool Settled(NodeId i) const { return anchored_[i] || (out_[i].mapped() && out_[i].strategy == Strategy::kStructure); }

  // Producers of the node's inputs that compute something: not
  // initializers, graph inputs (reported through `*from_input`), constants
  // or shape computations.
  template <typename F>
  bool ForComputedInputs(NodeId i, F&& f, bool* from_input = nullptr) const;

  // The nodes between two anchors of different modules, matched with the
  // operations the manifest's forward signatures run there. A node the
  // matching leaves open is left to the rules below.
  std::size_t Signatures(const std::vector<NodeId>& bucket, const ForwardSignatures& signatures);
  // The ops expected between two settled nodes: the expanded signatures'
  // calls between their places when both have one, else what the
  // signatures run between their modules (ForwardSignatures::Between).
  bool Expected(NodeId before, NodeId after, const ForwardSignatures& signatures,
                std::vector<ExpectedOp>* expected);

  // A module's path for evidence, "<root>" for the root.
  absl::string_view Named(ModuleId m) const;

  // Nodes of an op type only one module's recorded forward runs an op of
  // (rules "forward_ops"; a rotary embedding's `cos` and `sin`): that
  // module, wherever the node lies. A shape computation only when some
  // consumer reads it as data (not as an argument: rules
  // "shape_operand_ops"), since the lowering of any call builds shapes.
  void OnlyRunner();
  // Per node, whether a consumer reads an output of it as data: a node
  // that is no shape computation, reading it other than as an argument,
  // or a shape computation whose own output is so read.
  std::vector<bool> ReadAsData() const;

  // Head of B: walking backwards, a node all of whose consumers are B's
  // anchors or B's head nodes.
  void Heads(const std::vector<NodeId>& bucket);

  // Tail of A: a node reading only results of A's anchors or A's tail.
  void Tails(const std::vector<NodeId>& bucket);

  // The anchors around each position of a bucket: previous and next
  // settled node (kNoNode at the ends).
  void Neighbours(const std::vector<NodeId>& bucket, std::vector<NodeId>* prev,
                  std::vector<NodeId>* next) const;

  // A parameterless module beside the path between A and B (a child of a
  // module on it) whose rule says it produces `op`; deepest on A's side
  // first. kNoModule when none.
  ModuleId ModuleForOp(ModuleId a, ModuleId b, absl::string_view op) const;

  // The child of `parent` on the way down to `module`; kNoModule when
  // `module` is `parent` or not below it.
  ModuleId ChildToward(ModuleId parent, ModuleId module) const;

  // Rules::moduleProduces, once per (rule, op type).
  bool Produces(int rule, absl::string_view op) const;

  void ModuleOpRegions(const std::vector<NodeId>& bucket);

  // The single-input chain of ops around `seed` (x / sqrt2 -> Erf -> + 1 ->
  // x * ... -> * 0.5), between the anchors `lo` and `hi`.
  void Region(NodeId seed, ModuleId module, NodeId lo, NodeId hi);

  // First and last settled node of each module's subtree.
  void ComputeStarts();

  // True when every value `i` reads was produced inside `module`'s interval
  // (from its first to its last settled node, or by a node settled in it)
  // or was already read there before `i` (the module received it).
  bool Available(NodeId i, ModuleId module) const;

  void Intervals(const std::vector<NodeId>& bucket);

  const Graph& graph_;
  const Manifest& manifest_;
  const Rules& rules_;
  const OpTraits& ops_;
  const TensorEvidence& tensors_;
  const std::vector<bool>& shape_;
  const OpCallPlaces* places_;
  // What Expected() may still copy from the places' calls.
  std::size_t placed_calls_left_ = 0;
  std::vector<MappingRecord>& out_;
  EvidenceStore* evidence_;
  const std::size_t n_;
  std::vector<bool> library_;
  std::vector<int> module_ops_;
  std::vector<bool> params_below_;
  // Per module: its parameterless children that a module_ops rule names.
  std::vector<std::vector<ModuleId>> op_children_;
  mutable absl::flat_hash_map<std::pair<int, absl::string_view>, bool> produces_;
  std::vector<bool> anchored_;
  std::vector<NodeId> order_;      // nodes in the order used
  std::vector<std::size_t> pos_;   // node -> index in order_
  std::vector<std::vector<NodeId>> buckets_;
  std::vector<std::size_t> start_;
  // Per module: the position of its (or a descendant's) last settled node.
  std::vector<std::size_t> end_;
  std::vector<std::size_t> first_anchor_;  // per module, in order_
  double factor_ = 1.0;
  std::vector<ForwardCall> calls_;  // the expanded root forward, for FindFoldedResults()
  absl::flat_hash_map<absl::string_view, std::size_t> folded_;  // initializer -> call
};

}  // namespace structure
}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_STRUCTURE_PASS_H_
