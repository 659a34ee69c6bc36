#include "mapping/strategies/op_calls.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/node_fields.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/core/name_family.h"
#include "mapping/core/weight_shapes.h"

namespace semmap {
namespace internal {
namespace {

// Checks of the placements against the data flow, each dropping at least
// one op; past this many the names place nothing.
constexpr int kMaxSweeps = 32;
// An op's names may leave at most one in this many of its recorded calls
// unnamed at the end (NumberedNodes).
constexpr std::size_t kMaxMissingTail = 3;
constexpr std::int64_t kNowhere = -1;
// The most calls a node's window spans (PlaceInWindows), and the calls
// all windows of a graph may visit: this many per graph node.
constexpr std::int64_t kMaxWindow = 4096;
constexpr std::size_t kWindowVisitsPerNode = 64;
// Weights of one shape read in one window pair up by creation counter only
// this many at a time (the groups' keys are their reads).
constexpr std::size_t kMaxPairedReads = 8;
// A reader of a shared tensor whose type the read's op cannot be exported
// as may fuse it with an op of one of this many calls after it (ONNX
// Runtime's BiasGelu: a Linear's bias add and the activation's GELU).
constexpr std::int64_t kFuseAhead = 4;

using Call = ForwardCall;

// The checks of op_calls.h over the graph's numbered names.
class OpCallPlacer {
 public:
  OpCallPlacer(const MappingContext& context, const std::vector<bool>& shape)
      : context_(context),
        graph_(context.graph),
        nodes_(context.graph),
        manifest_(context.manifest),
        shape_(&shape) {}

  OpCallPlaces Run() {
    if (!AnyUnmapped()) return {};
    if (!ExpandRoot(manifest_, graph_.size(), &calls_) || calls_.empty()) return {};
    IndexCalls();
    // Without names numbering calls, the parameter reads alone place
    // nodes, when the graph's names say the manifest is this model's (a
    // graph of anonymous weights is left to the structural step, which
    // confirms such a manifest by itself first). The readers of shared
    // tensors pair with their reads only where counts, ops and windows
    // agree, which a manifest of another model does not pass by chance:
    // on a graph of anonymous weights that step alone runs.
    const bool numbered = NumberedNodes();
    const bool named = numbered || context_.tensors.NamesManifest(kMinNamedShare);
    if (!named && !AnySharedRead()) return {};
    PlaceWeightReads();
    for (int sweep = 0; numbered; ++sweep) {
      if (sweep == kMaxSweeps) return {};
      if (!DropWorstOp()) break;
    }
    if (numbered) Assign();
    window_visits_left_ = kWindowVisitsPerNode * graph_.size();
    Bound();
    PairSharedReads();
    // Weights are aligned in windows only between nodes named after their
    // calls: the parameter reads alone leave windows wide, and the
    // structural step's own alignment does better there (measured).
    if (numbered) AlignInWindows();
    if (named) {
      PlaceInWindows();
      WidenFusions();
    }
    OpCallPlaces places;
    places.calls.reserve(calls_.size());
    for (const Call& call : calls_) places.calls.push_back({call.module, call.event->op});
    places.place.resize(graph_.size());
    bool any = false;
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      places.place[i] = Place(static_cast<NodeId>(i));
      if (places.place[i] == kNowhere && !in_call_.empty()) places.place[i] = in_call_[i];
      any = any || places.place[i] != kNowhere;
    }
    if (!any) return {};
    return places;
  }

 private:
  // The nodes an op's names number, by call.
  struct Numbered {
    absl::string_view op;
    std::vector<std::pair<std::uint64_t, NodeId>> nodes;
    bool kept = false;
    bool tail_missing = false;  // the last calls recorded are named by no node
  };

  bool AnyUnmapped() const {
    for (const MappingRecord& r : context_.records) {
      if (!r.mapped()) return true;
    }
    return false;
  }

  // Each op's calls (under its alias), and each parameter read once.
  void IndexCalls() {
    const RuleQueries rules(context_.rules);
    for (std::size_t k = 0; k < calls_.size(); ++k) {
      const ForwardEvent& e = *calls_[k].event;
      calls_of_[rules.OpCallAlias(e.op)].push_back(static_cast<std::uint32_t>(k));
      for (absl::string_view read : e.reads) {
        auto it = read_at_.try_emplace(std::make_pair(calls_[k].module, absl::string_view(read)),
                                       static_cast<std::int64_t>(k));
        if (!it.second) it.first->second = kNowhere;  // read more than once
      }
    }
  }

  // The main graph's nodes named after a call, grouped by op; an op is
  // kept when the signatures record exactly the calls its numbers need.
  // False when none is.
  bool NumberedNodes() {
    const RuleQueries rules(context_.rules);
    absl::flat_hash_map<absl::string_view, std::size_t> index;
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      const NodeId id = static_cast<NodeId>(i);
      absl::string_view op;
      std::uint64_t call = 0;
      if (nodes_.subgraph(id) != 0 || !rules.OpCallName(nodes_.name(id), &op, &call)) continue;
      auto it = index.try_emplace(op, ops_.size());
      if (it.second) ops_.push_back({op, {}, false});
      ops_[it.first->second].nodes.push_back({call, static_cast<NodeId>(i)});
    }
    pos_.assign(graph_.size(), kNowhere);
    op_of_.assign(graph_.size(), -1);
    bool any = false;
    for (std::size_t o = 0; o < ops_.size(); ++o) {
      Numbered& numbered = ops_[o];
      std::sort(numbered.nodes.begin(), numbered.nodes.end());
      const auto calls = calls_of_.find(numbered.op);
      if (calls == calls_of_.end() || numbered.nodes.back().first + 1 > calls->second.size()) {
        continue;
      }
      // Fewer calls named than recorded: only a short tail missing (a tool
      // renamed or fused the last few: the last block's matmuls, the
      // head's Gemm rebuilt without its dropped zero bias), with half the
      // calls named. A glue op whose numbers stop early (T5's arange)
      // counts otherwise than the signatures.
      const std::size_t recorded = calls->second.size();
      const std::size_t missing_tail = recorded - (numbered.nodes.back().first + 1);
      if (missing_tail > 0 && (missing_tail * kMaxMissingTail > recorded ||
                               numbered.nodes.size() * 2 < recorded)) {
        continue;
      }
      bool repeated = false;
      for (std::size_t k = 1; k < numbered.nodes.size(); ++k) {
        repeated = repeated || numbered.nodes[k].first == numbered.nodes[k - 1].first;
      }
      if (repeated) continue;
      numbered.kept = any = true;
      numbered.tail_missing = missing_tail > 0;
      for (const auto& [call, node] : numbered.nodes) {
        pos_[node] = calls->second[call];
        op_of_[node] = static_cast<int>(o);
      }
    }
    return any;
  }

  // The place of the parameter read each main-graph node makes, when its
  // module's signature reads it once, as an op that may export as the
  // node's op type.
  void PlaceWeightReads() {
    const RuleQueries rules(context_.rules);
    read_pos_.assign(graph_.size(), kNowhere);
    any_read_.assign(graph_.size(), kNowhere);
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      const NodeId id = static_cast<NodeId>(i);
      if (nodes_.subgraph(id) != 0) continue;
      const absl::Span<const absl::string_view> inputs = nodes_.inputs(id);
      const absl::Span<const ValueId> input_values = nodes_.inputValues(id);
      for (std::size_t k = 0; k < inputs.size() && read_pos_[i] == kNowhere; ++k) {
        if (graph_.initializerOf(input_values[k]) == nullptr) continue;
        const absl::string_view name = inputs[k];
        if (context_.tensors.IsShared(name)) continue;
        const ModuleId owner = context_.tensors.LiteralOwner(name);
        if (owner == kNoModule) continue;
        const absl::string_view local = name.substr(name.rfind('.') + 1);
        const auto it = read_at_.find(std::make_pair(owner, local));
        if (it == read_at_.end() || it->second == kNowhere) continue;
        const absl::string_view op = calls_[static_cast<std::size_t>(it->second)].event->op;
        if (any_read_[i] == kNowhere) any_read_[i] = it->second;
        if (MayExport(rules, op, nodes_.opType(id))) read_pos_[i] = it->second;
      }
    }
  }

  using Dims = std::vector<std::int64_t>;

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
  void PairSharedReads() {
    std::vector<std::int64_t> taken;
    const std::map<Dims, std::vector<NodeId>> readers = SharedReaders(&taken);
    if (readers.empty()) return;
    const std::map<Dims, std::vector<std::int64_t>> reads = SharedReads(readers, taken);
    // Each group that fits by count and op, placed at once; then checked
    // against the windows those places bound.
    const RuleQueries rules(context_.rules);
    std::vector<std::pair<const std::vector<NodeId>*, const std::vector<std::int64_t>*>> groups;
    // Per reader fusing the read's op with a later call's (FusedWith), that call.
    absl::flat_hash_map<NodeId, std::int64_t> fused;
    for (const auto& [dims, nodes] : readers) {
      const auto it = reads.find(dims);
      if (it == reads.end() || it->second.size() != nodes.size()) continue;
      bool fits = true;
      absl::flat_hash_map<NodeId, std::int64_t> fuses;
      for (std::size_t k = 0; k < nodes.size() && fits; ++k) {
        const std::int64_t at = it->second[k];
        const absl::string_view type = graph_.node(nodes[k]).op_type;
        if (MayExport(rules, calls_[static_cast<std::size_t>(at)].event->op, type)) continue;
        const std::int64_t with = context_.ops.IsWeightPassthrough(nodes[k]) ? kNowhere : FusedWith(rules, at, type);
        fits = with != kNowhere;
        fuses.emplace(nodes[k], with);
      }
      if (!fits) continue;
      fused.insert(fuses.begin(), fuses.end());
      for (std::size_t k = 0; k < nodes.size(); ++k) read_pos_[nodes[k]] = it->second[k];
      groups.emplace_back(&nodes, &it->second);
    }
    if (groups.empty()) return;
    Bound();
    for (const auto& [nodes, at] : groups) {
      bool inside = true;
      for (std::size_t k = 0; k < nodes->size() && inside; ++k) {
        const NodeId i = (*nodes)[k];
        inside = from_[i] <= (*at)[k] && (until_[i] == kNowhere || (*at)[k] <= until_[i]);
      }
      for (std::size_t k = 0; k < nodes->size(); ++k) {
        const NodeId i = (*nodes)[k];
        if (!inside) {
          read_pos_[i] = kNowhere;
          continue;
        }
        const Call& call = calls_[static_cast<std::size_t>((*at)[k])];
        MappingRecord& r = context_.records[i];
        r.module = call.module;
        r.confidence = confidence::structure::kOpWindow;
        r.strategy = Strategy::kStructure;
        std::string fusion;
        if (const auto f = fused.find(i); f != fused.end()) {
          // It does both calls' work: their lowest common ancestor, with
          // both as origins.
          const ModuleId other = calls_[static_cast<std::size_t>(f->second)].module;
          const ModuleId both = manifest_.lowestCommonAncestor(call.module, other);
          if (both != kNoModule) {
            context_.origins.Set(i, {call.module, other});
            r.module = both;
            fusion = absl::StrCat(", fused with ", manifest_.path(other), "'s ",
                                  calls_[static_cast<std::size_t>(f->second)].event->op);
          }
        }
        r.evidence = context_.evidence.Intern(absl::StrCat(
            "reads a tensor ", nodes->size(), " nodes share (equal parameters de-duplicated);",
            " reader ", k + 1, " of them in order makes read ", k + 1, " of a parameter of its shape: ",
            manifest_.path(call.module), "'s", fusion, " (forward signatures)"));
      }
    }
    Bound();
  }

  // The unmapped, unplaced main-graph nodes making a SharedRead(), by the
  // shape read, in the graph's order; `taken` gets the places of the
  // placed ones (their calls are no read left to pair).
  std::map<Dims, std::vector<NodeId>> SharedReaders(std::vector<std::int64_t>* taken) const {
    std::map<Dims, std::vector<NodeId>> readers;
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      const NodeId id = static_cast<NodeId>(i);
      if (nodes_.subgraph(id) != 0) continue;
      const absl::Span<const absl::string_view> inputs = nodes_.inputs(id);
      const absl::Span<const ValueId> input_values = nodes_.inputValues(id);
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const TensorInfo* t = SharedRead(input_values[k], inputs[k]);
        if (t == nullptr) continue;
        const std::int64_t place = Place(static_cast<NodeId>(i));
        if (place != kNowhere) {
          taken->push_back(place);
        } else if (!context_.records[i].mapped()) {
          readers[Dims(t->dims.begin(), t->dims.end())].push_back(static_cast<NodeId>(i));
        }
        break;
      }
    }
    std::sort(taken->begin(), taken->end());
    return readers;
  }

  // Per shape of `readers`, the calls of the expanded forward that read a
  // parameter of that shape once, in order, one per call (a norm reads its
  // weight and its bias in one node), but for a parameter some initializer
  // is named after, a call in `taken`, and a call that also reads a named
  // parameter whose readers, and the nodes they feed, read no shared
  // tensor (it made no shared read in the graph: a tool dropped the zero
  // bias a Gemm read beside its named weight), and a call whose op no
  // reader of the shape may be exported as (nor, fused, a call after it).
  std::map<Dims, std::vector<std::int64_t>> SharedReads(const std::map<Dims, std::vector<NodeId>>& readers,
                                                        const std::vector<std::int64_t>& taken) {
    const RuleQueries rules(context_.rules);
    absl::flat_hash_set<NodeId> shared_readers;
    // The readers' op types per shape (a few kinds of many readers).
    std::map<Dims, std::vector<absl::string_view>> types;
    for (const auto& [dims, nodes] : readers) {
      shared_readers.insert(nodes.begin(), nodes.end());
      std::vector<absl::string_view>& of = types[dims];
      for (const NodeId c : nodes) {
        const absl::string_view type = graph_.node(c).op_type;
        if (std::find(of.begin(), of.end(), type) == of.end()) of.push_back(type);
      }
    }
    // Named, not shared: whether a reader of a shared tensor reads it.
    absl::flat_hash_map<std::pair<ModuleId, absl::string_view>, bool> named;
    for (const TensorInfo& t : graph_.initializers()) {
      if (t.subgraph != 0 || context_.tensors.IsShared(t.name)) continue;
      const ModuleId owner = context_.tensors.LiteralOwner(t.name);
      if (owner == kNoModule) continue;
      // Its readers, or the nodes they feed (a MatMul's bias Add, or a
      // BiasGelu fusing it), read a shared tensor.
      bool with_shared = false;
      for (const NodeId c : graph_.consumers(graph_.value(t.name))) {
        with_shared = with_shared || shared_readers.contains(c);
        for (const ValueId v : graph_.node(c).output_values) {
          for (const NodeId next : graph_.consumers(v)) with_shared = with_shared || shared_readers.contains(next);
        }
      }
      named.emplace(std::make_pair(owner, t.name.substr(t.name.rfind('.') + 1)), with_shared);
    }
    std::map<Dims, std::vector<std::int64_t>> reads;
    for (std::size_t k = 0; k < calls_.size(); ++k) {
      const Call& call = calls_[k];
      const auto dropped = [&](absl::string_view read) {
        const auto it = named.find(std::make_pair(call.module, absl::string_view(read)));
        return it != named.end() && !it->second;
      };
      if (std::binary_search(taken.begin(), taken.end(), static_cast<std::int64_t>(k)) ||
          std::any_of(call.event->reads.begin(), call.event->reads.end(), dropped)) {
        continue;
      }
      for (absl::string_view read : call.event->reads) {
        const auto key = std::make_pair(call.module, absl::string_view(read));
        const auto at = read_at_.find(key);
        if (at == read_at_.end() || at->second != static_cast<std::int64_t>(k) || named.contains(key)) {
          continue;
        }
        const absl::Span<const TensorSpec> params = manifest_.parameters(call.module);
        const auto p = std::find_if(params.begin(), params.end(),
                                    [&](const TensorSpec& spec) { return spec.name == read; });
        if (p == params.end()) continue;
        const Dims shape(p->shape.begin(), p->shape.end());
        const auto of_shape = types.find(shape);
        if (of_shape == types.end()) continue;
        // A read no reader of its shape could have made is another node's
        // (a tied embedding's lookup and its head's matmul): not counted.
        if (std::none_of(of_shape->second.begin(), of_shape->second.end(), [&](absl::string_view type) {
              return MayExport(rules, call.event->op, type) ||
                     FusedWith(rules, static_cast<std::int64_t>(k), type) != kNowhere;
            })) {
          continue;
        }
        std::vector<std::int64_t>& at_shape = reads[shape];
        if (at_shape.empty() || at_shape.back() != static_cast<std::int64_t>(k)) {
          at_shape.push_back(static_cast<std::int64_t>(k));
        }
      }
    }
    return reads;
  }

  // The first of the kFuseAhead calls after call `at`, of another module,
  // whose op may be exported as `op_type`; kNowhere when none, or when
  // call `at` runs an op exporters fold.
  std::int64_t FusedWith(const RuleQueries& rules, std::int64_t at, absl::string_view op_type) {
    const ModuleId module = calls_[static_cast<std::size_t>(at)].module;
    // A normalisation exporters fold goes into the op before it, never
    // into a later one (rules "folded_ops").
    if (rules.IsFoldedOp(calls_[static_cast<std::size_t>(at)].event->op)) return kNowhere;
    for (std::int64_t j = at + 1; j <= at + kFuseAhead && j < static_cast<std::int64_t>(calls_.size()); ++j) {
      const Call& call = calls_[static_cast<std::size_t>(j)];
      if (call.module != module && MayExport(rules, call.event->op, op_type)) return j;
    }
    return kNowhere;
  }

  // Whether some main-graph node makes a SharedRead().
  bool AnySharedRead() const {
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      const NodeId id = static_cast<NodeId>(i);
      if (nodes_.subgraph(id) != 0) continue;
      const absl::Span<const absl::string_view> inputs = nodes_.inputs(id);
      const absl::Span<const ValueId> input_values = nodes_.inputValues(id);
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        if (SharedRead(input_values[k], inputs[k]) != nullptr) return true;
      }
    }
    return false;
  }

  // The initializer a node reads as `value` (named `name`) when the read
  // says nothing of which parameter it is: a shared tensor, or the output
  // of an Identity of an initializer that no parameter names (TorchScript
  // reads each de-duplicated copy so; the names stripped, the copy is
  // anonymous). Else null.
  const TensorInfo* SharedRead(ValueId value, absl::string_view name) const {
    if (const TensorInfo* t = graph_.initializerOf(value)) {
      return context_.tensors.IsShared(t->name) ? t : nullptr;
    }
    const NodeId p = graph_.producer(value);
    if (p == kNoNode) return nullptr;
    const Node producer = graph_.node(p);
    if (producer.op_type != "Identity" || producer.input_values.size() != 1) return nullptr;
    const TensorInfo* t = graph_.initializerOf(producer.input_values[0]);
    // The name last: the rules' suffixes make it the costly test.
    return t == nullptr || context_.tensors.ParameterOwner(name) != kNoModule ? nullptr : t;
  }

  // One sweep over the main graph in its (topological) order: the latest
  // place among each node's producers and theirs. An op is at fault when
  // one of its nodes sits later than a node it feeds, or outside the
  // module of a parameter it reads. Drops the op most often at fault;
  // false when none is.
  bool DropWorstOp() {
    struct Reach {
      std::int64_t at = kNowhere;
      NodeId from = kNoNode;
    };
    std::vector<Reach> reach(graph_.size());
    std::vector<std::size_t> faults(ops_.size(), 0);
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      if (nodes_.subgraph(static_cast<NodeId>(i)) != 0) continue;
      Reach best;
      for (const ValueId v : nodes_.inputValues(static_cast<NodeId>(i))) {
        const NodeId p = graph_.producer(v);
        if (p == kNoNode || static_cast<std::size_t>(p) >= i) continue;
        if (reach[p].at > best.at) best = reach[p];
        const std::int64_t own = Place(p);
        if (own > best.at) best = {own, p};
      }
      const std::int64_t own = Place(static_cast<NodeId>(i));
      if (own != kNowhere && best.at > own) {
        const int culprit = Kept(best.from) ? op_of_[best.from] : op_of_[i];
        if (culprit >= 0 && ops_[culprit].kept) ++faults[culprit];
      }
      if (Kept(static_cast<NodeId>(i)) && read_pos_[i] != kNowhere &&
          calls_[static_cast<std::size_t>(read_pos_[i])].module !=
              calls_[static_cast<std::size_t>(pos_[i])].module) {
        ++faults[op_of_[i]];
      }
      reach[i] = best;
    }
    const auto worst = std::max_element(faults.begin(), faults.end());
    if (worst == faults.end() || *worst == 0) return false;
    ops_[worst - faults.begin()].kept = false;
    return true;
  }

  bool Kept(NodeId i) const {
    return i != kNoNode && op_of_[i] >= 0 && ops_[op_of_[i]].kept;
  }

  // Per node, the first call it may be part of (from_: after the calls
  // named upstream, whose lowering ends with the named node; at the
  // parameter reads upstream, whose call goes on after the reading node)
  // and the earliest place downstream (until_).
  void Bound() {
    const std::size_t n = graph_.size();
    from_.assign(n, 0);
    until_.assign(n, kNowhere);
    for (std::size_t i = 0; i < n; ++i) {
      for (const ValueId v : nodes_.inputValues(static_cast<NodeId>(i))) {
        const NodeId p = graph_.producer(v);
        if (p == kNoNode || static_cast<std::size_t>(p) >= i) continue;
        from_[i] = std::max(from_[i], From(p));
      }
    }
    for (std::size_t i = n; i-- > 0;) {
      for (const ValueId v : nodes_.outputValues(static_cast<NodeId>(i))) {
        for (const NodeId c : graph_.consumers(v)) {
          if (static_cast<std::size_t>(c) <= i) continue;
          for (const std::int64_t at : {until_[c], Place(c)}) {
            if (at != kNowhere && (until_[i] == kNowhere || at < until_[i])) until_[i] = at;
          }
        }
      }
    }
  }

  // The first call a consumer of node p may be part of.
  std::int64_t From(NodeId p) const {
    if (Kept(p)) return std::max(from_[p], pos_[p] + 1);
    return std::max(from_[p], read_pos_[p] == kNowhere ? 0 : read_pos_[p]);
  }

  // An unmapped node reading a weight no parameter is named after (a
  // Linear's weight the exporter transposed into a new initializer) takes
  // the one parameter of a compatible shape that a call in its window
  // reads, by an op that may export as the node's type; its place is then
  // that read (q, k, v and an MLP of one shape told apart by where they
  // run).
  void AlignInWindows() {
    const RuleQueries rules(context_.rules);
    // Nodes whose window holds several such reads, by window and reads:
    // as many nodes as reads pair up in the order of their creation
    // counters (rules "order_keys"), which follows execution order.
    std::map<std::vector<std::int64_t>, std::vector<NodeId>> shared;
    bool any = false;
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      std::vector<std::int64_t> reads;
      const TensorInfo* weight = nullptr;
      if (!ReadsInWindow(static_cast<NodeId>(i), rules, &weight, &reads)) continue;
      if (reads.size() == 1) {
        AlignWith(static_cast<NodeId>(i), *weight, reads[0]);
        any = true;
      } else if (reads.size() <= kMaxPairedReads) {
        shared[reads].push_back(static_cast<NodeId>(i));
      }
    }
    for (auto& [reads, nodes] : shared) {
      if (nodes.size() != reads.size()) continue;
      std::vector<std::pair<std::uint64_t, NodeId>> keyed;
      for (const NodeId i : nodes) {
        std::uint64_t key = 0;
        if (!rules.OrderKey(nodes_.name(i), &key)) break;
        keyed.push_back({key, i});
      }
      if (keyed.size() != nodes.size()) continue;
      std::sort(keyed.begin(), keyed.end());
      bool distinct = true;
      for (std::size_t k = 1; k < keyed.size(); ++k) distinct &= keyed[k].first != keyed[k - 1].first;
      if (!distinct) continue;
      for (std::size_t k = 0; k < keyed.size(); ++k) {
        const NodeId i = keyed[k].second;
        const TensorInfo* weight = UnnamedWeightOf(i);
        if (weight != nullptr) AlignWith(i, *weight, reads[k]);
      }
      any = true;
    }
    if (any) Bound();
  }

  // The rank >= 2 initializer node i reads that no parameter is named
  // after, or nullptr.
  const TensorInfo* UnnamedWeightOf(NodeId i) const {
    for (const ValueId v : nodes_.inputValues(i)) {
      const TensorInfo* t = graph_.initializerOf(v);
      if (t != nullptr && t->dims.size() >= 2 &&
          context_.tensors.ParameterOwner(t->name) == kNoModule) {
        return t;
      }
    }
    return nullptr;
  }

  // For an unmapped node reading an unnamed weight: the calls in its
  // window that read a parameter of the weight's shape, by an op that may
  // export as the node's type, in order. False when the node is not one
  // or its window is unknown.
  bool ReadsInWindow(NodeId i, const RuleQueries& rules, const TensorInfo** weight,
                     std::vector<std::int64_t>* reads) {
    if (context_.records[i].mapped() || (*shape_)[i] || Place(i) != kNowhere) return false;
    const Node node = graph_.node(i);
    if (node.subgraph != 0 || !FromExport(i)) return false;
    *weight = UnnamedWeightOf(i);
    const std::int64_t from = from_[i], to = until_[i];
    if (*weight == nullptr || !ChargeWindow(from, to)) return false;
    for (std::int64_t k = from; k <= to; ++k) {
      const Call& call = calls_[static_cast<std::size_t>(k)];
      if (call.event->reads.empty() || !MayExport(rules, call.event->op, node.op_type)) continue;
      if (ReadsShape(call, (*weight)->dims)) reads->push_back(k);
    }
    return !reads->empty();
  }

  void AlignWith(NodeId i, const TensorInfo& weight, std::int64_t read) {
    const Call& call = calls_[static_cast<std::size_t>(read)];
    MappingRecord& r = context_.records[i];
    r.module = call.module;
    r.confidence = confidence::structure::kOpWindow;
    r.strategy = Strategy::kStructure;
    r.evidence = context_.evidence.Intern(absl::StrCat(
        "unnamed weight ", weight.name, " has the shape of a parameter ",
        manifest_.path(call.module), "'s forward reads between the calls its inputs",
        " come from and the first that reads it (forward signatures)"));
    read_pos_[i] = read;
  }

  // Whether `call` reads a parameter of its module that a weight of `dims`
  // may be (Compatible: the same shape or a matrix's transpose).
  bool ReadsShape(const Call& call, absl::Span<const std::int64_t> dims) const {
    for (absl::string_view read : call.event->reads) {
      for (const TensorSpec& p : manifest_.parameters(call.module)) {
        if (p.name == read && Compatible(dims, p.shape)) return true;
      }
    }
    return false;
  }

  // Each unplaced node runs after the calls that produced its inputs and
  // no later than the first call that reads its outputs (a node inside an
  // op's lowering feeds the node named after the call): when every call
  // in that window that may export as its op type is one module's, that
  // module ran it (confidence::structure::kOpWindow). Not for shape
  // computations (the arguments of a view, a mask's sizes): no call of
  // their own exports them, so a window would find another op of their
  // type (a `cat` for a shape's Concat); nor for the nodes a tool inserted
  // (FromExport).
  void PlaceInWindows() {
    const std::size_t n = graph_.size();
    // The first call each node may be part of: after the places upstream,
    // or at the one call a node upstream was placed in (the rest of that
    // call's lowering may follow it: a SiLU's Mul after its Sigmoid).
    std::vector<std::int64_t> first(n, 0);
    std::vector<std::int64_t>& in_call = in_call_;
    in_call.assign(n, kNowhere);
    for (std::size_t i = 0; i < n; ++i) {
      for (const ValueId v : nodes_.inputValues(static_cast<NodeId>(i))) {
        const NodeId p = graph_.producer(v);
        if (p == kNoNode || static_cast<std::size_t>(p) >= i) continue;
        first[i] = std::max({first[i], first[p], From(p), in_call[p]});
      }
      MappingRecord& r = context_.records[i];
      if (r.mapped() || Place(static_cast<NodeId>(i)) != kNowhere || (*shape_)[i]) continue;
      const Node node = graph_.node(static_cast<NodeId>(i));
      if (node.subgraph != 0 || !FromExport(static_cast<NodeId>(i))) continue;
      std::int64_t call = kNowhere;
      const ModuleId module = OneModuleIn(first[i], until_[i], node.op_type, &call);
      if (module == kNoModule) continue;
      in_call[i] = call;
      const absl::string_view path = manifest_.path(module);
      r.module = module;
      r.confidence = confidence::structure::kOpWindow;
      r.strategy = Strategy::kStructure;
      r.evidence = context_.evidence.Intern(absl::StrCat(
          path.empty() ? "<root>" : path, "'s forward is the only one to run an op exported as ",
          node.op_type, " between the calls its inputs come from and the first that reads it",
          " (forward signatures)"));
    }
  }

  // A node its parameter names (tensor_names) whose type the op reading
  // that parameter cannot be exported as, and one other module's op in its
  // window can, does both modules' work: a tool fused them (ONNX Runtime's
  // BiasGelu, a Linear's bias add with the activation module's GELU). It
  // becomes their lowest common ancestor, with both as origins, as a
  // fusion whose output names tell its parts does (TensorEvidence).
  void WidenFusions() {
    const RuleQueries rules(context_.rules);
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      MappingRecord& r = context_.records[i];
      if (!r.mapped() || r.strategy != Strategy::kTensorNames || any_read_[i] == kNowhere ||
          !context_.origins.Of(static_cast<NodeId>(i)).empty()) {
        continue;
      }
      const Call& read = calls_[static_cast<std::size_t>(any_read_[i])];
      const Node node = graph_.node(static_cast<NodeId>(i));
      // It continues the work of the call that reads its parameter (its
      // inputs come from that call), and is not a reshape or cast of the
      // parameter itself.
      if (read.module != r.module || from_[i] != any_read_[i] ||
          context_.ops.IsWeightPassthrough(static_cast<NodeId>(i)) ||
          MayExport(rules, read.event->op, node.op_type)) {
        continue;
      }
      const ModuleId other = OneModuleInWindow(static_cast<NodeId>(i), node.op_type);
      if (other == kNoModule || other == r.module) continue;
      const ModuleId both = manifest_.lowestCommonAncestor(r.module, other);
      if (both == kNoModule) continue;
      context_.origins.Set(static_cast<NodeId>(i), {r.module, other});
      const absl::string_view path = manifest_.path(other);
      r.module = both;
      r.evidence = context_.evidence.Intern(absl::StrCat(
          "fuses its parameters' module's ", read.event->op, " with ",
          path.empty() ? "<root>" : path, "'s op exported as ", node.op_type,
          " (forward signatures)"));
    }
  }

  // The one module whose calls in node i's window (after the calls its
  // inputs come from, up to the first reading it) may export `op_type`;
  // kNoModule when none, several, the window is unknown or too wide, or
  // the graph's budget of visits is spent.
  ModuleId OneModuleInWindow(NodeId i, absl::string_view op_type) {
    std::int64_t call = kNowhere;
    return OneModuleIn(from_[i], until_[i], op_type, &call);
  }

  // Whether the window [from, to] is known and at most kMaxWindow calls,
  // and the graph's budget of visits still holds it; charges it then.
  bool ChargeWindow(std::int64_t from, std::int64_t to) {
    if (to == kNowhere || to < from || to - from >= kMaxWindow) return false;
    const std::size_t span = static_cast<std::size_t>(to - from + 1);
    if (span > window_visits_left_) return false;
    window_visits_left_ -= span;
    return true;
  }

  // The one module whose calls [from, to] may export `op_type`, and in
  // `*call` the one such call, when there is one (else kNowhere);
  // kNoModule when none, several, the window is unknown or too wide, or the
  // graph's budget of visits is spent.
  ModuleId OneModuleIn(std::int64_t from, std::int64_t to, absl::string_view op_type,
                       std::int64_t* call) {
    if (!ChargeWindow(from, to)) return kNoModule;
    const RuleQueries rules(context_.rules);
    ModuleId module = kNoModule;
    std::size_t found = 0;
    for (std::int64_t k = from; k <= to; ++k) {
      const Call& c = calls_[static_cast<std::size_t>(k)];
      if (!MayExport(rules, c.event->op, op_type)) continue;
      if (module != kNoModule && module != c.module) return kNoModule;
      module = c.module;
      *call = k;
      ++found;
    }
    if (found != 1) *call = kNowhere;
    return module;
  }

  // Whether a node may be an export of a call: not one a tool inserted
  // (quantizer ops, casts and the like that follow their consumers, a node
  // named after another node plus a suffix: node_MatMul_55_quant_scales_mul).
  bool FromExport(NodeId i) const {
    if (context_.ops.FollowsConsumers(i) || context_.ops.IsQuantizerOp(i)) return false;
    return DerivedFrom(nodes_.name(i), [&](absl::string_view prefix) {
             return graph_.find(prefix) != kNoNode;
           }).empty();
  }

  bool MayExport(const RuleQueries& rules, absl::string_view op, absl::string_view op_type) {
    auto fits = may_.try_emplace(std::make_pair(op, op_type), false);
    if (fits.second) fits.first->second = rules.MayExportAs(op, op_type);
    return fits.first->second;
  }

  // A node's place in the expanded signatures: its numbered call when its
  // op is kept, else the parameter read it makes.
  std::int64_t Place(NodeId i) const { return Kept(i) ? pos_[i] : read_pos_[i]; }

  std::size_t Assign() {
    std::size_t placed = 0;
    for (const Numbered& numbered : ops_) {
      if (!numbered.kept) continue;
      for (const auto& [call, node] : numbered.nodes) {
        MappingRecord& r = context_.records[node];
        if (r.mapped()) continue;
        const ModuleId module = calls_[static_cast<std::size_t>(pos_[node])].module;
        const absl::string_view path = manifest_.path(module);
        r.module = module;
        // Counts that agree exactly confirm the names; a missing tail
        // does less.
        r.confidence = numbered.tail_missing ? confidence::structure::kOpWindow
                                             : confidence::structure::kOpCall;
        r.strategy = Strategy::kStructure;
        r.evidence = context_.evidence.Intern(absl::StrCat(
            path.empty() ? "<root>" : path, "'s forward runs this ", numbered.op,
            " call: the node's name numbers it among the model's ", numbered.op,
            " calls (forward signatures", numbered.tail_missing ? "; the last calls named by no node" : "",
            ")"));
        ++placed;
      }
    }
    return placed;
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

}  // namespace

OpCallPlaces PlaceOpCalls(const MappingContext& context, const std::vector<bool>& shape) {
  return OpCallPlacer(context, shape).Run();
}

}  // namespace internal
}  // namespace semmap
