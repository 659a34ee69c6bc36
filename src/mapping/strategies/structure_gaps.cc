// The structural pass after the anchors (structure_pass.h): forward
// signatures, heads, tails, module-op regions and intervals between them.

#include "mapping/strategies/structure_pass.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/strategies/forward_signature.h"

namespace semmap {
namespace internal {
namespace structure {

template <typename F>
bool Pass::ForComputedInputs(NodeId i, F&& f, bool* from_input) const {
  const Node& n = graph_.node(i);
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    const absl::string_view v = n.inputs[k];
    if (v.empty() || graph_.initializerOf(n.input_values[k]) != nullptr) continue;
    const NodeId p = graph_.producer(n.input_values[k]);
    if (p == kNoNode) {
      if (from_input != nullptr) *from_input = true;
      continue;
    }
    if (graph_.node(p).inputs.empty() || shape_[p]) continue;
    if (!f(v, p)) return false;
  }
  return true;
}

std::size_t Pass::Signatures(const std::vector<NodeId>& bucket, const ForwardSignatures& signatures) {
  std::size_t matched = 0;
  std::vector<NodeId> gap;
  std::vector<absl::string_view> op_types;
  std::vector<ExpectedOp> expected;
  NodeId last = kNoNode;
  for (const NodeId i : bucket) {
    if (!Settled(i)) {
      if (Candidate(i)) gap.push_back(i);
      continue;
    }
    const NodeId before = last;
    last = i;
    if (before == kNoNode || gap.empty()) {
      gap.clear();
      continue;
    }
    const ModuleId a = out_[before].module;
    const ModuleId b = out_[i].module;
    if (Expected(before, i, signatures, &expected)) {
      op_types.clear();
      for (NodeId g : gap) op_types.push_back(graph_.node(g).op_type);
      const std::vector<ModuleId> modules = signatures.Align(op_types, expected);
      for (std::size_t k = 0; k < gap.size(); ++k) {
        if (modules[k] == kNoModule) continue;
        ++matched;
        Assign(gap[k], modules[k], kSignature,
               absl::StrCat(Named(modules[k]), "'s forward runs this ", op_types[k], " between ",
                            Named(a), " and ", Named(b), " (forward signatures)"));
      }
    }
    gap.clear();
  }
  return matched;
}

bool Pass::Expected(NodeId before, NodeId after, const ForwardSignatures& signatures,
                    std::vector<ExpectedOp>* expected) {
  // Both ends placed in the expanded signatures: exactly the ops between
  // their places, theirs included (an op exported as several nodes).
  if (places_ != nullptr) {
    const std::int64_t from = places_->place[before], to = places_->place[after];
    const std::size_t span = static_cast<std::size_t>(to - from) + 1;
    if (from >= 0 && to >= from && span <= kMaxPlacedGap && span <= placed_calls_left_) {
      placed_calls_left_ -= span;
      expected->assign(places_->calls.begin() + from, places_->calls.begin() + to + 1);
      return true;
    }
  }
  const ModuleId a = out_[before].module, b = out_[after].module;
  return a != kNoModule && a != b && signatures.Between(a, b, expected);
}

void Pass::OnlyRunner() {
  // Per torch op, the one traced module whose own code runs it (or
  // kSeveral) and how many times its recorded forward does.
  constexpr ModuleId kSeveral = kNoModule - 1;
  struct Runner {
    ModuleId module;
    std::size_t runs;
  };
  absl::flat_hash_map<absl::string_view, Runner> runner;
  for (std::size_t m = 0; m < manifest_.size(); ++m) {
    const ModuleInfo& info = manifest_.module(static_cast<ModuleId>(m));
    if (!info.traced) continue;
    for (const ForwardEvent& e : info.forward) {
      if (e.call != kNoModule) continue;
      const auto [it, added] = runner.try_emplace(e.op, Runner{static_cast<ModuleId>(m), 0});
      if (!added && it->second.module != static_cast<ModuleId>(m)) it->second.module = kSeveral;
      ++it->second.runs;
    }
  }
  if (runner.empty()) return;
  absl::flat_hash_map<absl::string_view, std::size_t> nodes_of_type;
  for (const NodeId i : order_) ++nodes_of_type[graph_.node(i).op_type];
  const RuleQueries rules(rules_);
  // Op type -> its one runner, when the graph holds no more nodes of the
  // type than that runner's ops (a composite op exports more kinds than
  // rules "forward_ops" lists: an attention's functional call its
  // Concats and Gathers, which a single `cat` elsewhere must not claim).
  absl::flat_hash_map<absl::string_view, ModuleId> by_type;
  std::vector<bool> as_data;  // ReadAsData(), when a shape computation asks
  for (const NodeId i : order_) {
    const Node& n = graph_.node(i);
    if (out_[i].mapped() || ops_.FollowsConsumers(i) || n.inputs.empty()) continue;
    auto [it, added] = by_type.try_emplace(n.op_type, kNoModule);
    if (added) {
      std::size_t runs = 0;
      for (const auto& [op, r] : runner) {
        if (!rules.MayExportAs(op, n.op_type)) continue;
        if (r.module == kSeveral || (it->second != kNoModule && it->second != r.module)) {
          it->second = kSeveral;
          break;
        }
        it->second = r.module;
        runs += r.runs;
      }
      if (it->second != kSeveral && nodes_of_type[n.op_type] > runs) it->second = kSeveral;
    }
    const ModuleId module = it->second;
    if (module == kNoModule || module == kSeveral) continue;
    if (shape_[i]) {
      if (as_data.empty()) as_data = ReadAsData();
      if (!as_data[i]) continue;
    }
    Assign(i, module, kOnlyRunner,
           absl::StrCat(Named(module), "'s forward is the only one to run an op exported as ",
                        n.op_type, " (forward signatures)"));
  }
}

std::vector<bool> Pass::ReadAsData() const {
  std::vector<bool> as_data(n_, false);
  // Consumers come after their producers in a topological order: two
  // sweeps from the end settle the main graph and subgraph nodes reading
  // outer values (a malformed graph's cycle reads nothing as data).
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (std::size_t k = n_; k-- > 0;) {
      const NodeId i = static_cast<NodeId>(k);
      if (as_data[k]) continue;
      for (const ValueId v : graph_.node(i).output_values) {
        for (const NodeId c : graph_.consumers(v)) {
          bool data = false;
          data = shape_[c] ? as_data[static_cast<std::size_t>(c)] : !ReadsAsArgument(graph_, ops_, c, v);
          if (data) as_data[k] = true;
        }
      }
    }
  }
  return as_data;
}

absl::string_view Pass::Named(ModuleId m) const {
  const absl::string_view path = manifest_.path(m);
  return path.empty() ? absl::string_view("<root>") : absl::string_view(path);
}

void Pass::Heads(const std::vector<NodeId>& bucket) {
  ModuleId next = kNoModule;
  absl::flat_hash_map<NodeId, ModuleId> head;
  for (std::size_t k = bucket.size(); k-- > 0;) {
    const NodeId i = bucket[k];
    if (anchored_[i]) {
      next = out_[i].module;
      continue;
    }
    // A head runs before the module's first anchor; a module that already
    // ran and is entered again is a join, not a head.
    if (next == kNoModule || library_[next] || !Candidate(i) || first_anchor_[next] < pos_[i]) continue;
    const Node& n = graph_.node(i);
    bool any = false, all = true;
    for (ValueId v : n.output_values) {
      for (NodeId c : graph_.consumers(v)) {
        any = true;
        const bool ok = (anchored_[c] && out_[c].module == next) || (head.contains(c) && head[c] == next);
        if (!ok) all = false;
      }
    }
    if (any && all) {
      head[i] = next;
      Assign(i, next, kHead, absl::StrCat("computes only for ", manifest_.path(next),
                                          " (runs before its weights are read)"));
    }
  }
}

void Pass::Tails(const std::vector<NodeId>& bucket) {
  ModuleId prev = kNoModule;
  absl::flat_hash_map<NodeId, ModuleId> tail;
  for (NodeId i : bucket) {
    if (anchored_[i]) {
      prev = out_[i].module;
      continue;
    }
    if (prev == kNoModule || library_[prev] || !Candidate(i)) continue;
    bool any = false, from_input = false;
    const bool all = ForComputedInputs(
        i,
        [&](absl::string_view, NodeId p) {
          any = true;
          return (anchored_[p] && out_[p].module == prev) || (tail.contains(p) && tail[p] == prev);
        },
        &from_input);
    if (any && all && !from_input) {
      tail[i] = prev;
      Assign(i, prev, kTail, absl::StrCat("reads only results of ", manifest_.path(prev)));
    }
  }
}

void Pass::Neighbours(const std::vector<NodeId>& bucket, std::vector<NodeId>* prev,
                std::vector<NodeId>* next) const {
  prev->assign(bucket.size(), kNoNode);
  next->assign(bucket.size(), kNoNode);
  NodeId last = kNoNode;
  for (std::size_t k = 0; k < bucket.size(); ++k) {
    (*prev)[k] = last;
    if (Settled(bucket[k])) last = bucket[k];
  }
  last = kNoNode;
  for (std::size_t k = bucket.size(); k-- > 0;) {
    (*next)[k] = last;
    if (Settled(bucket[k])) last = bucket[k];
  }
}

ModuleId Pass::ModuleForOp(ModuleId a, ModuleId b, absl::string_view op) const {
  const ModuleId lca = manifest_.lowestCommonAncestor(a, b);
  for (ModuleId side : {a, b}) {
    for (ModuleId c = side; c != kNoModule; c = manifest_.parent(c)) {
      // Of several such children (one activation module per conv), the
      // one registered between the path's children, else the first after
      // A's, else the first: modules are registered in the order their
      // forward calls them more often than not.
      const ModuleId ca = ChildToward(c, a), cb = ChildToward(c, b);
      ModuleId first = kNoModule, after = kNoModule, between = kNoModule;
      for (ModuleId k : op_children_[c]) {
        if (!Produces(module_ops_[k], op)) continue;
        if (first == kNoModule) first = k;
        if (ca == kNoModule || k < ca) continue;
        if (after == kNoModule) after = k;
        if (between == kNoModule && cb != kNoModule && k < cb) between = k;
      }
      if (first != kNoModule) {
        return between != kNoModule ? between : after != kNoModule ? after : first;
      }
      if (c == lca) break;
    }
  }
  return kNoModule;
}

ModuleId Pass::ChildToward(ModuleId parent, ModuleId module) const {
  for (ModuleId m = module; m != kNoModule; m = manifest_.parent(m)) {
    if (manifest_.parent(m) == parent) return m;
  }
  return kNoModule;
}

bool Pass::Produces(int rule, absl::string_view op) const {
  auto key = std::make_pair(rule, op);
  auto it = produces_.find(key);
  if (it == produces_.end()) it = produces_.emplace(key, internal::RuleQueries(rules_).ModuleProduces(rule, op)).first;
  return it->second;
}

void Pass::ModuleOpRegions(const std::vector<NodeId>& bucket) {
  std::vector<NodeId> prev, next;
  Neighbours(bucket, &prev, &next);
  for (std::size_t k = 0; k < bucket.size(); ++k) {
    const NodeId seed = bucket[k];
    if (!Candidate(seed) || prev[k] == kNoNode || next[k] == kNoNode) continue;
    const ModuleId module =
        ModuleForOp(out_[prev[k]].module, out_[next[k]].module, graph_.node(seed).op_type);
    if (module == kNoModule) continue;
    Region(seed, module, prev[k], next[k]);
  }
}

void Pass::Region(NodeId seed, ModuleId module, NodeId lo, NodeId hi) {
  const std::string evidence =
      absl::StrCat(graph_.node(seed).op_type, " between ", manifest_.path(out_[lo].module),
                   " and ", manifest_.path(out_[hi].module), ": ",
                   manifest_.module(module).class_name.empty() ? manifest_.path(module)
                                                               : manifest_.module(module).class_name);
  auto single_input = [&](NodeId i, absl::string_view* input) {
    int count = 0;
    ForComputedInputs(i, [&](absl::string_view v, NodeId) {
      if (count++ == 0) *input = v;
      return true;
    });
    return count == 1;
  };
  absl::string_view entry;
  if (!single_input(seed, &entry)) return;
  // Backwards: single-input producers used only by the region (collected
  // last first, then put in order).
  std::vector<NodeId> region = {seed};
  for (;;) {
    const Node& first = graph_.node(region.back());
    const NodeId p = graph_.producer(entry, first.subgraph);
    absl::string_view before;
    if (p == kNoNode || pos_[p] <= pos_[lo] || !Candidate(p) || !single_input(p, &before)) break;
    if (graph_.consumers(entry, first.subgraph).size() != 1) break;
    region.push_back(p);
    entry = before;
  }
  std::reverse(region.begin(), region.end());
  absl::flat_hash_set<absl::string_view> values = {entry};
  absl::flat_hash_set<NodeId> members(region.begin(), region.end());
  for (NodeId r : region) {
    for (absl::string_view o : graph_.node(r).outputs) values.insert(o);
  }
  // Forwards: consumers reading only the region's values.
  for (std::size_t q = 0; q < region.size(); ++q) {
    const Node& n = graph_.node(region[q]);
    for (absl::string_view o : n.outputs) {
      if (o.empty()) continue;
      for (NodeId c : graph_.consumers(o, n.subgraph)) {
        if (members.contains(c) || pos_[c] >= pos_[hi] || !Candidate(c)) continue;
        const bool inside = ForComputedInputs(c, [&](absl::string_view v, NodeId) {
          return values.contains(v);
        });
        if (!inside) continue;
        members.insert(c);
        region.push_back(c);
        for (absl::string_view co : graph_.node(c).outputs) values.insert(co);
      }
    }
  }
  for (NodeId r : region) Assign(r, module, kModuleOps, evidence);
}

void Pass::ComputeStarts() {
  start_.assign(manifest_.size(), n_);
  end_.assign(manifest_.size(), 0);
  for (NodeId i : order_) {
    if (!Settled(i)) continue;
    for (ModuleId m = out_[i].module; m != kNoModule && start_[m] > pos_[i];
         m = manifest_.parent(m)) {
      start_[m] = pos_[i];
    }
    for (ModuleId m = out_[i].module; m != kNoModule && end_[m] < pos_[i];
         m = manifest_.parent(m)) {
      end_[m] = pos_[i];
    }
  }
}

bool Pass::Available(NodeId i, ModuleId module) const {
  const std::size_t begin = start_[module];
  if (begin >= pos_[i]) return false;
  const int subgraph = graph_.node(i).subgraph;
  bool from_input = false;
  const bool ok = ForComputedInputs(
      i,
      [&](absl::string_view v, NodeId p) {
        // A value computed after the module's last settled node, by a node
        // not settled in it, was computed outside it (by the caller, after
        // the module returned: a mask built from its output's shape).
        if (pos_[p] > end_[module] &&
            !(Settled(p) && manifest_.isAncestorOrSelf(module, out_[p].module))) {
          return false;
        }
        if (pos_[p] >= begin) return true;
        // Bounded: a value read by very many nodes is not looked through.
        const auto consumers = graph_.consumers(v, subgraph);
        if (consumers.size() > kMaxConsumerScan) return false;
        for (NodeId c : consumers) {
          if (pos_[c] >= begin && pos_[c] < pos_[i]) return true;
        }
        return false;
      },
      &from_input);
  return ok && !from_input;
}

void Pass::Intervals(const std::vector<NodeId>& bucket) {
  std::vector<NodeId> prev, next;
  Neighbours(bucket, &prev, &next);
  for (std::size_t k = 0; k < bucket.size(); ++k) {
    const NodeId i = bucket[k];
    if (!Candidate(i) || prev[k] == kNoNode || next[k] == kNoNode) continue;
    const ModuleId a = out_[prev[k]].module;
    const ModuleId b = out_[next[k]].module;
    const absl::string_view pa = manifest_.path(a);
    if (a == b) {
      Assign(i, a, kInterval, absl::StrCat("between two nodes of ", pa));
      continue;
    }
    const ModuleId lca = manifest_.lowestCommonAncestor(a, b);
    ModuleId found = kNoModule;
    for (ModuleId m = a; m != kNoModule && m != lca; m = manifest_.parent(m)) {
      if (!library_[m] && Available(i, m)) {
        found = m;
        break;
      }
    }
    if (found != kNoModule) {
      Assign(i, found, kInterval,
             absl::StrCat("after ", pa, ", inside ", manifest_.path(found),
                          " (reads only values it holds)"));
      continue;
    }
    ModuleId owner = lca;
    while (owner != kNoModule && library_[owner] && manifest_.parent(owner) != kNoModule) {
      owner = manifest_.parent(owner);
    }
    Assign(i, owner, kLca, absl::StrCat("between ", Named(a), " and ", Named(b), " in execution order"));
  }
}

}  // namespace structure
}  // namespace internal
}  // namespace semmap
