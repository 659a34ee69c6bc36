// Where nodes sit in the model's forward (op_calls.h): the entry, its
// phases in order (op_calls_placer.h), and the first of them: the names
// numbering calls, and the sweeps that check them against the data flow.
#include "mapping/strategies/op_calls.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/strategies/op_calls_placer.h"

namespace semmap {
namespace internal {
namespace op_calls {

OpCallPlacer::OpCallPlacer(const MappingContext& context, const std::vector<bool>& shape)
    : context_(context),
      graph_(context.graph),
      nodes_(context.graph),
      manifest_(context.manifest),
      shape_(&shape) {}

OpCallPlaces OpCallPlacer::Run() {
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

void OpCallPlacer::IndexCalls() {
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

bool OpCallPlacer::NumberedNodes() {
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

bool OpCallPlacer::DropWorstOp() {
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

std::size_t OpCallPlacer::Assign() {
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

}  // namespace op_calls

OpCallPlaces PlaceOpCalls(const MappingContext& context, const std::vector<bool>& shape) {
  return op_calls::OpCallPlacer(context, shape).Run();
}

}  // namespace internal
}  // namespace semmap
