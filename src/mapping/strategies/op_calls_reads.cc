// Op call places, the parameter reads (op_calls_placer.h): a node reading
// a parameter its module's forward reads once sits at that read, and the
// readers of shared tensors pair with the reads of their shape.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/strategies/op_calls_placer.h"

namespace semmap {
namespace internal {
namespace op_calls {

void OpCallPlacer::PlaceWeightReads() {
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

void OpCallPlacer::PairSharedReads() {
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

std::map<Dims, std::vector<NodeId>> OpCallPlacer::SharedReaders(
    std::vector<std::int64_t>* taken) const {
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

std::map<Dims, std::vector<std::int64_t>> OpCallPlacer::SharedReads(
    const std::map<Dims, std::vector<NodeId>>& readers, const std::vector<std::int64_t>& taken) {
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

std::int64_t OpCallPlacer::FusedWith(const RuleQueries& rules, std::int64_t at,
                                     absl::string_view op_type) {
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

bool OpCallPlacer::AnySharedRead() const {
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

const TensorInfo* OpCallPlacer::SharedRead(ValueId value, absl::string_view name) const {
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

}  // namespace op_calls
}  // namespace internal
}  // namespace semmap
