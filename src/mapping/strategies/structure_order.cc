// The structural pass's node order (structure_pass.h): the file's, the
// exporter's creation counters, a re-linearisation; and name families.

#include "mapping/strategies/structure_pass.h"

#include "mapping/core/name_family.h"

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

std::vector<NodeId> Pass::FileOrder() const {
  std::vector<NodeId> order(n_);
  for (std::size_t i = 0; i < n_; ++i) order[i] = static_cast<NodeId>(i);
  return order;
}

void Pass::NameFamilies() {
  absl::flat_hash_map<absl::string_view, NodeId> by_name;
  for (std::size_t i = 0; i < n_; ++i) {
    absl::string_view name = graph_.node(static_cast<NodeId>(i)).name;
    if (!name.empty()) by_name.emplace(name, static_cast<NodeId>(i));
  }
  // Roots first: a shorter name is never derived from a longer one.
  std::vector<NodeId> by_length;
  for (std::size_t i = 0; i < n_; ++i) by_length.push_back(static_cast<NodeId>(i));
  std::stable_sort(by_length.begin(), by_length.end(), [&](NodeId a, NodeId b) {
    return graph_.node(a).name.size() < graph_.node(b).name.size();
  });
  for (NodeId i : by_length) {
    if (out_[i].mapped()) continue;
    const absl::string_view name = graph_.node(i).name;
    if (internal::RuleQueries(rules_).IsDerivedNodeName(name)) continue;
    const absl::string_view from =
        DerivedFrom(name, [&](absl::string_view prefix) { return by_name.contains(prefix); });
    if (from.empty()) continue;
    const MappingRecord& root = out_[by_name.at(from)];
    if (root.mapped() && root.confidence >= 0.5) {
      MappingRecord& m = out_[i];
      m.module = root.module;
      m.confidence = std::min(root.confidence, kNameFamily);
      m.strategy = Strategy::kStructure;
      m.evidence = evidence_->Intern(absl::StrCat("named after node ", from));
    }
  }
}

double Pass::OrderAgreement() const {
  std::size_t pairs = 0, agree = 0;
  ModuleId last = kNoModule;
  for (NodeId i : order_) {
    if (!anchored_[i] || graph_.node(i).subgraph != 0) continue;
    const ModuleId m = out_[i].module;
    if (last != kNoModule && m != last) {
      ++pairs;
      if (m > last || manifest_.isAncestorOrSelf(m, last)) ++agree;
    }
    last = m;
  }
  return pairs == 0 ? 1.0 : static_cast<double>(agree) / static_cast<double>(pairs);
}

std::vector<NodeId> Pass::CreationOrder(bool* used, bool weight_counters) const {
  std::vector<NodeId> order(n_);
  for (std::size_t i = 0; i < n_; ++i) order[i] = static_cast<NodeId>(i);
  *used = false;
  std::vector<std::uint64_t> key(n_, 0);
  std::size_t keyed = 0;
  for (std::size_t i = 0; i < n_; ++i) {
    const Node& n = graph_.node(static_cast<NodeId>(i));
    std::uint64_t k = 0;
    bool own = internal::RuleQueries(rules_).OrderKey(n.name, &k);
    for (std::size_t o = 0; o < n.outputs.size() && !own; ++o) own = internal::RuleQueries(rules_).OrderKey(n.outputs[o], &k);
    if (own) {
      ++keyed;
      key[i] = k;
      continue;
    }
    // The file is in topological order, so producers are keyed first. A
    // weight the exporter made (a transposed matrix, val_419) carries the
    // counter of its creation too: a projection of a value computed long
    // before (a cross-attention's key over the encoder's output) sorts
    // where it ran, not right after that value. Only weights: a small
    // constant the exporter shares keeps the counter of its first use.
    // (Without signatures only: with them, the op calls place those
    // readers, and the weights' counters moved glue nodes around them.)
    for (std::size_t in = 0; in < n.input_values.size() && in < n.inputs.size(); ++in) {
      const ValueId v = n.input_values[in];
      const NodeId p = graph_.producer(v);
      if (p != kNoNode) {
        if (static_cast<std::size_t>(p) < i) key[i] = std::max(key[i], key[p]);
        continue;
      }
      const TensorInfo* weight = v == kNoValue || !weight_counters ? nullptr : graph_.initializerOf(v);
      std::uint64_t created = 0;
      if (weight != nullptr && weight->dims.size() >= 2 && internal::RuleQueries(rules_).OrderKey(n.inputs[in], &created)) {
        key[i] = std::max(key[i], created);
      }
    }
  }
  if (keyed * kMinKeyedShare < n_) return order;
  std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return key[a] < key[b]; });
  *used = true;
  return order;
}

void Pass::SetOrder(std::vector<NodeId> order) {
  order_ = std::move(order);
  pos_.assign(n_, 0);
  for (std::size_t k = 0; k < order_.size(); ++k) pos_[order_[k]] = k;
}

std::vector<NodeId> Pass::DepthFirstOrder() const {
  std::vector<NodeId> order;
  order.reserve(n_);
  std::vector<std::uint8_t> state(n_, 0);  // 0 new, 1 open, 2 emitted
  std::vector<std::pair<NodeId, std::size_t>> stack;
  auto visit = [&](NodeId root) {
    if (root == kNoNode || state[root] != 0) return;
    stack.emplace_back(root, 0);
    state[root] = 1;
    while (!stack.empty()) {
      auto& [node, next_input] = stack.back();
      const Node& n = graph_.node(node);
      if (next_input < n.inputs.size()) {
        absl::string_view v = n.inputs[next_input++];
        const NodeId p = v.empty() ? kNoNode : graph_.producer(v, 0);
        if (p != kNoNode && state[p] == 0 && graph_.node(p).subgraph == 0) {
          state[p] = 1;
          stack.emplace_back(p, 0);
        }
        continue;
      }
      state[node] = 2;
      order.push_back(node);
      stack.pop_back();
    }
  };
  for (absl::string_view output : graph_.outputs()) visit(graph_.producer(output, 0));
  for (std::size_t i = 0; i < n_; ++i) {
    if (graph_.node(static_cast<NodeId>(i)).subgraph == 0) visit(static_cast<NodeId>(i));
  }
  for (std::size_t i = 0; i < n_; ++i) {
    if (graph_.node(static_cast<NodeId>(i)).subgraph != 0) order.push_back(static_cast<NodeId>(i));
  }
  return order;
}

void Pass::BuildBuckets() {
  buckets_.assign(graph_.subgraphs().size(), {});
  for (NodeId i : order_) {
    const int s = graph_.node(i).subgraph;
    if (s >= 0 && static_cast<std::size_t>(s) < buckets_.size()) buckets_[s].push_back(i);
  }
}

}  // namespace structure
}  // namespace internal
}  // namespace semmap
