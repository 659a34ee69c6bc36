// The placement of op_calls.h as one class over the expanded signatures,
// in the phases PlaceOpCalls runs: the names numbering calls and the
// sweeps that check them against the data flow (op_calls.cc), the
// parameter reads (op_calls_reads.cc), then the windows between placed
// nodes (op_calls_windows.cc). The class and its tuning are here.
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_OP_CALLS_PLACER_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_OP_CALLS_PLACER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/node_fields.h"
#include "manifest/rule_queries.h"
#include "mapping/core/mapping_context.h"
#include "mapping/strategies/forward_signature.h"
#include "mapping/strategies/op_calls.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {
namespace op_calls {

// The placement's tuning.
//
// Checks of the placements against the data flow, each dropping at least
// one op; past this many the names place nothing.
inline constexpr int kMaxSweeps = 32;
// An op's names may leave at most one in this many of its recorded calls
// unnamed at the end (NumberedNodes).
inline constexpr std::size_t kMaxMissingTail = 3;
inline constexpr std::int64_t kNowhere = -1;
// The most calls a node's window spans (PlaceInWindows), and the calls
// all windows of a graph may visit: this many per graph node.
inline constexpr std::int64_t kMaxWindow = 4096;
inline constexpr std::size_t kWindowVisitsPerNode = 64;
// Weights of one shape read in one window pair up by creation counter only
// this many at a time (the groups' keys are their reads).
inline constexpr std::size_t kMaxPairedReads = 8;
// A reader of a shared tensor whose type the read's op cannot be exported
// as may fuse it with an op of one of this many calls after it (ONNX
// Runtime's BiasGelu: a Linear's bias add and the activation's GELU).
inline constexpr std::int64_t kFuseAhead = 4;

using Call = ForwardCall;
using Dims = std::vector<std::int64_t>;

// The checks of op_calls.h over the graph's numbered names. Reads the
// context; writes its records, evidence and origins.
class OpCallPlacer {
 public:
  OpCallPlacer(const MappingContext& context, const std::vector<bool>& shape);

  // PlaceOpCalls (op_calls.h).
  OpCallPlaces Run();

 private:
  // The nodes an op's names number, by call.
  struct Numbered {
    absl::string_view op;
    std::vector<std::pair<std::uint64_t, NodeId>> nodes;
    bool kept = false;
    bool tail_missing = false;  // the last calls recorded are named by no node
  };

  // --- Names and sweeps (op_calls.cc). ---

  // Whether some node is still unmapped: else there is nothing to place.
  bool AnyUnmapped() const {
    for (const MappingRecord& r : context_.records) {
      if (!r.mapped()) return true;
    }
    return false;
  }

  // Each op's calls (under its alias), and each parameter read once.
  void IndexCalls();

  // The main graph's nodes named after a call, grouped by op; an op is
  // kept when the signatures record exactly the calls its numbers need.
  // False when none is.
  bool NumberedNodes();

  // One sweep over the main graph in its (topological) order: the latest
  // place among each node's producers and theirs. An op is at fault when
  // one of its nodes sits later than a node it feeds, or outside the
  // module of a parameter it reads. Drops the op most often at fault;
  // false when none is.
  bool DropWorstOp();

  // Maps each unmapped node of a kept op to its call's module
  // (confidence::structure::kOpCall, kOpWindow with a missing tail);
  // returns how many.
  std::size_t Assign();

  bool Kept(NodeId i) const {
    return i != kNoNode && op_of_[i] >= 0 && ops_[op_of_[i]].kept;
  }

  // A node's place in the expanded signatures: its numbered call when its
  // op is kept, else the parameter read it makes.
  std::int64_t Place(NodeId i) const { return Kept(i) ? pos_[i] : read_pos_[i]; }

  // Whether a torch op may be exported as an op type (Rules::MayExportAs,
  // asked once per pair: may_).
  bool MayExport(const RuleQueries& rules, absl::string_view op, absl::string_view op_type) {
    auto fits = may_.try_emplace(std::make_pair(op, op_type), false);
    if (fits.second) fits.first->second = rules.MayExportAs(op, op_type);
    return fits.first->second;
  }

  // --- Parameter reads (op_calls_reads.cc). ---

  // The place of the parameter read each main-graph node makes, when its
  // module's signature reads it once, as an op that may export as the
  // node's op type.
  void PlaceWeightReads();

  // The readers of shared tensors (TensorEvidence::IsShared: equal
  // parameters de-duplicated into one initializer) of one shape, in the
  // graph's order, against the reads of that shape's parameters no other
  // initializer is named after, in the forward's order (SharedReads()):
  // when they are as many, each read's op may export as its reader's type,
  // and each read lies in its reader's window once all are placed (the
  // graph's order may interleave branches the forward ran one after the
  // other), the k-th reader makes the k-th read
  // (confidence::structure::kOpWindow). Bounds the windows again when it
  // placed any.
  void PairSharedReads();

  // The unmapped, unplaced main-graph nodes making a SharedRead(), by the
  // shape read, in the graph's order; `taken` gets the places of the
  // placed ones (their calls are no read left to pair).
  std::map<Dims, std::vector<NodeId>> SharedReaders(std::vector<std::int64_t>* taken) const;

  // Per shape of `readers`, the calls of the expanded forward that read a
  // parameter of that shape once, in order, one per call (a norm reads its
  // weight and its bias in one node), but for a parameter some initializer
  // is named after, a call in `taken`, and a call that also reads a named
  // parameter whose readers, and the nodes they feed, read no shared
  // tensor (it made no shared read in the graph: a tool dropped the zero
  // bias a Gemm read beside its named weight), and a call whose op no
  // reader of the shape may be exported as (nor, fused, a call after it).
  std::map<Dims, std::vector<std::int64_t>> SharedReads(const std::map<Dims, std::vector<NodeId>>& readers,
                                                        const std::vector<std::int64_t>& taken);

  // The first of the kFuseAhead calls after call `at`, of another module,
  // whose op may be exported as `op_type`; kNowhere when none, or when
  // call `at` runs an op exporters fold.
  std::int64_t FusedWith(const RuleQueries& rules, std::int64_t at, absl::string_view op_type);

  // Whether some main-graph node makes a SharedRead().
  bool AnySharedRead() const;

  // The initializer a node reads as `value` (named `name`) when the read
  // says nothing of which parameter it is: a shared tensor, or the output
  // of an Identity of an initializer that no parameter names (TorchScript
  // reads each de-duplicated copy so; the names stripped, the copy is
  // anonymous). Else null.
  const TensorInfo* SharedRead(ValueId value, absl::string_view name) const;

  // --- Windows (op_calls_windows.cc). ---

  // Per node, the first call it may be part of (from_: after the calls
  // named upstream, whose lowering ends with the named node; at the
  // parameter reads upstream, whose call goes on after the reading node)
  // and the earliest place downstream (until_).
  void Bound();

  // An unmapped node reading a weight no parameter is named after (a
  // Linear's weight the exporter transposed into a new initializer) takes
  // the one parameter of a compatible shape that a call in its window
  // reads, by an op that may export as the node's type; its place is then
  // that read (q, k, v and an MLP of one shape told apart by where they
  // run).
  void AlignInWindows();

  // The rank >= 2 initializer node i reads that no parameter is named
  // after, or nullptr.
  const TensorInfo* UnnamedWeightOf(NodeId i) const;

  // For an unmapped node reading an unnamed weight: the calls in its
  // window that read a parameter of the weight's shape, by an op that may
  // export as the node's type, in order. False when the node is not one
  // or its window is unknown.
  bool ReadsInWindow(NodeId i, const RuleQueries& rules, const TensorInfo** weight,
                     std::vector<std::int64_t>* reads);

  // Maps node i to the module making `read`, of the parameter its unnamed
  // `weight` is (confidence::structure::kOpWindow); `read` is its place.
  void AlignWith(NodeId i, const TensorInfo& weight, std::int64_t read);

  // Whether `call` reads a parameter of its module that a weight of `dims`
  // may be (Compatible: the same shape or a matrix's transpose).
  bool ReadsShape(const Call& call, absl::Span<const std::int64_t> dims) const;

  // Each unplaced node runs after the calls that produced its inputs and
  // no later than the first call that reads its outputs (a node inside an
  // op's lowering feeds the node named after the call): when every call
  // in that window that may export as its op type is one module's, that
  // module ran it (confidence::structure::kOpWindow). Not for shape
  // computations (the arguments of a view, a mask's sizes): no call of
  // their own exports them, so a window would find another op of their
  // type (a `cat` for a shape's Concat); nor for the nodes a tool inserted
  // (FromExport).
  void PlaceInWindows();

  // A node its parameter names (tensor_names) whose type the op reading
  // that parameter cannot be exported as, and one other module's op in its
  // window can, does both modules' work: a tool fused them (ONNX Runtime's
  // BiasGelu, a Linear's bias add with the activation module's GELU). It
  // becomes their lowest common ancestor, with both as origins, as a
  // fusion whose output names tell its parts does (TensorEvidence).
  void WidenFusions();

  // The one module whose calls in node i's window (after the calls its
  // inputs come from, up to the first reading it) may export `op_type`;
  // kNoModule when none, several, the window is unknown or too wide, or
  // the graph's budget of visits is spent.
  ModuleId OneModuleInWindow(NodeId i, absl::string_view op_type);

  // Whether the window [from, to] is known and at most kMaxWindow calls,
  // and the graph's budget of visits still holds it; charges it then.
  bool ChargeWindow(std::int64_t from, std::int64_t to);

  // The one module whose calls [from, to] may export `op_type`, and in
  // `*call` the one such call, when there is one (else kNowhere);
  // kNoModule when none, several, the window is unknown or too wide, or the
  // graph's budget of visits is spent.
  ModuleId OneModuleIn(std::int64_t from, std::int64_t to, absl::string_view op_type,
                       std::int64_t* call);

  // Whether a node may be an export of a call: not one a tool inserted
  // (quantizer ops, casts and the like that follow their consumers, a node
  // named after another node plus a suffix: node_MatMul_55_quant_scales_mul).
  bool FromExport(NodeId i) const;

  // The first call a consumer of node p may be part of.
  std::int64_t From(NodeId p) const {
    if (Kept(p)) return std::max(from_[p], pos_[p] + 1);
    return std::max(from_[p], read_pos_[p] == kNowhere ? 0 : read_pos_[p]);
  }

  const MappingContext& context_;
  const Graph& graph_;
  // The passes over every node read single fields (no Node assembled).
  const NodeFields nodes_;
  const Manifest& manifest_;
  const std::vector<bool>* shape_;
  std::vector<Call> calls_;
  // Keys view the rules' aliases and the manifest's events.
  absl::flat_hash_map<absl::string_view, std::vector<std::uint32_t>> calls_of_;
  absl::flat_hash_map<std::pair<ModuleId, absl::string_view>, std::int64_t> read_at_;
  std::vector<Numbered> ops_;   // keys view the graph's node names
  std::vector<std::int64_t> pos_;       // per node: its call, when numbered
  std::vector<int> op_of_;              // per node: its entry of ops_, or -1
  std::vector<std::int64_t> read_pos_;  // per node: its parameter read
  std::vector<std::int64_t> any_read_;  // ... whatever op reads it
  // Per node: the first call it may be part of, the earliest place
  // downstream (Bound).
  std::vector<std::int64_t> from_, until_;
  // Per node placed by its window: the one call there that may export it,
  // when there is one (PlaceInWindows).
  std::vector<std::int64_t> in_call_;
  std::size_t window_visits_left_ = 0;
  // Whether a torch op may be exported as an op type (keys view the
  // manifest's events and the graph's op types).
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, bool> may_;
};

}  // namespace op_calls
}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_OP_CALLS_PLACER_H_
