// Op call places, the windows (op_calls_placer.h): each node's window
// between the calls its inputs come from and the first call reading its
// outputs, and what one module's calls in it place: unplaced nodes,
// unnamed weights, fusions.
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/core/name_family.h"
#include "mapping/core/weight_shapes.h"
#include "mapping/strategies/op_calls_placer.h"

namespace semmap {
namespace internal {
namespace op_calls {

void OpCallPlacer::Bound() {
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

void OpCallPlacer::AlignInWindows() {
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

const TensorInfo* OpCallPlacer::UnnamedWeightOf(NodeId i) const {
  for (const ValueId v : nodes_.inputValues(i)) {
    const TensorInfo* t = graph_.initializerOf(v);
    if (t != nullptr && t->dims.size() >= 2 &&
        context_.tensors.ParameterOwner(t->name) == kNoModule) {
      return t;
    }
  }
  return nullptr;
}

bool OpCallPlacer::ReadsInWindow(NodeId i, const RuleQueries& rules, const TensorInfo** weight,
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

void OpCallPlacer::AlignWith(NodeId i, const TensorInfo& weight, std::int64_t read) {
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

bool OpCallPlacer::ReadsShape(const Call& call, absl::Span<const std::int64_t> dims) const {
  for (absl::string_view read : call.event->reads) {
    for (const TensorSpec& p : manifest_.parameters(call.module)) {
      if (p.name == read && Compatible(dims, p.shape)) return true;
    }
  }
  return false;
}

void OpCallPlacer::PlaceInWindows() {
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

void OpCallPlacer::WidenFusions() {
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

ModuleId OpCallPlacer::OneModuleInWindow(NodeId i, absl::string_view op_type) {
  std::int64_t call = kNowhere;
  return OneModuleIn(from_[i], until_[i], op_type, &call);
}

bool OpCallPlacer::ChargeWindow(std::int64_t from, std::int64_t to) {
  if (to == kNowhere || to < from || to - from >= kMaxWindow) return false;
  const std::size_t span = static_cast<std::size_t>(to - from + 1);
  if (span > window_visits_left_) return false;
  window_visits_left_ -= span;
  return true;
}

ModuleId OpCallPlacer::OneModuleIn(std::int64_t from, std::int64_t to, absl::string_view op_type,
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

bool OpCallPlacer::FromExport(NodeId i) const {
  if (context_.ops.FollowsConsumers(i) || context_.ops.IsQuantizerOp(i)) return false;
  return DerivedFrom(nodes_.name(i), [&](absl::string_view prefix) {
           return graph_.find(prefix) != kNoNode;
         }).empty();
}

}  // namespace op_calls
}  // namespace internal
}  // namespace semmap
