// The structural pass, step 1 (structure_pass.h): unnamed weights aligned
// with the manifest's unclaimed parameters.

#include "mapping/strategies/structure_pass.h"

#include "absl/strings/match.h"

#include <algorithm>
#include <limits>
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

bool Pass::ManifestFits() const { return tensors_.NamesManifest(kMinNamedShare); }

const TensorInfo* Pass::UnnamedWeight(NodeId i, bool* as_stored) const {
  const Node& n = graph_.node(i);
  for (ValueId value : n.input_values) {
    bool layout_kept = true;
    for (int depth = 0; depth <= kMaxPassthrough && value != kNoValue; ++depth) {
      if (const TensorInfo* t = graph_.initializerOf(value)) {
        if (t->dims.size() >= 2 && tensors_.ParameterOwner(t->name) == kNoModule && !folded_.contains(t->name)) {
          if (as_stored != nullptr) *as_stored = layout_kept;
          return t;
        }
        break;
      }
      const NodeId p = graph_.producer(value);
      if (p == kNoNode || !ops_.IsWeightPassthrough(p) || graph_.node(p).inputs.empty()) break;
      // Quantize, dequantize and cast nodes keep the layout; a Transpose or
      // a Reshape does not.
      layout_kept = layout_kept && ops_.FollowsConsumers(p);
      value = graph_.node(p).input_values[0];
    }
  }
  return nullptr;
}

bool Pass::FindFoldedResults() {
  folded_.clear();
  calls_.clear();
  if (!ExpandRoot(manifest_, n_, &calls_)) return false;
  const internal::RuleQueries queries(rules_);
  absl::flat_hash_map<absl::string_view, std::vector<std::size_t>> calls_of;
  for (std::size_t k = 0; k < calls_.size(); ++k) calls_of[queries.OpCallAlias(calls_[k].event->op)].push_back(k);
  std::string node_name;
  for (const TensorInfo& t : graph_.initializers()) {
    if (t.subgraph != 0 || t.dims.size() < 2 || tensors_.ParameterOwner(t.name) != kNoModule) continue;
    node_name = absl::StrCat("node_", t.name);
    absl::string_view op;
    std::uint64_t call = 0;
    if (!queries.OpCallName(node_name, &op, &call)) continue;
    const auto it = calls_of.find(op);
    if (it == calls_of.end() || call >= it->second.size()) continue;
    // Only a call that read parameters (a lookup in a table): the counts
    // of other ops (a view, which the exporter also makes of reshapes) may
    // number otherwise than the signatures.
    if (calls_[it->second[call]].event->reads.empty()) continue;
    folded_.emplace(t.name, it->second[call]);
  }
  return true;
}

bool Pass::Fits(NodeId i, const TensorInfo& weight, absl::Span<const std::int64_t> shape) const {
  return Compatible(weight.dims, shape) ||
         (ops_.ReadsBlockwiseWeight(i) && BlockwiseCompatible(weight.dims, shape));
}

ModuleId Pass::ConsumersModule(NodeId i) const {
  // Consumers mapped by their names (a bias Add by its bias, or by the
  // metadata a quantizer keeps on the nodes it left alone), seen through
  // the nodes a quantizer puts between a matmul and its bias Add:
  // casts and the like (rules "follow_consumers_ops") and nodes named after
  // the node (node_MatMul_55_quant_output_scale_mul), a few levels deep.
  const absl::string_view name = graph_.node(i).name;
  ModuleId module = kNoModule;
  std::vector<std::pair<NodeId, int>> todo = {{i, 0}};
  while (!todo.empty()) {
    const auto [at, depth] = todo.back();
    todo.pop_back();
    for (ValueId v : graph_.node(at).output_values) {
      for (NodeId c : graph_.consumers(v)) {
        const MappingRecord& m = out_[c];
        const bool by_name = m.strategy == Strategy::kTensorNames ||
                             m.strategy == Strategy::kExporterMetadata ||
                             m.strategy == Strategy::kExactScope;
        if (m.mapped() && by_name && (module == kNoModule || m.module == module)) {
          module = m.module;
          continue;
        }
        const absl::string_view consumer = graph_.node(c).name;
        const bool between = !m.mapped() && depth < kMaxPassthrough &&
                             (ops_.FollowsConsumers(c) ||
                              (!name.empty() && consumer.size() > name.size() &&
                               absl::StartsWith(consumer, name) && consumer[name.size()] == '_'));
        if (!between) return kNoModule;
        todo.push_back({c, depth + 1});
      }
    }
  }
  return module;
}

template <typename Params>
std::size_t Pass::ParamOf(const Params& params, const std::vector<std::size_t>& by_module,
                          const std::vector<bool>& used, ModuleId module, NodeId i,
                          const TensorInfo& weight) const {
  // Search the module's range of `by_module` only.
  auto first = std::lower_bound(by_module.begin(), by_module.end(), module,
                                [&](std::size_t j, ModuleId m) { return params[j].module < m; });
  for (auto it = first; it != by_module.end() && params[*it].module == module; ++it) {
    if (!used[*it] && Fits(i, weight, params[*it].spec->shape)) return *it;
  }
  return params.size();
}

template <typename Params>
std::size_t Pass::WindowMatch(const Params& params, const std::vector<std::size_t>& subtree_first,
                              const std::vector<bool>& used, std::size_t first_unused,
                              ModuleId last_named, NodeId i, const TensorInfo& weight,
                              bool transposed) const {
  // From the subtree of the last named module's parent on, when a parameter
  // fits there; else from the first unused one.
  std::size_t start = first_unused;
  if (last_named != kNoModule) {
    ModuleId floor = manifest_.parent(last_named);
    if (floor == kNoModule) floor = last_named;
    if (subtree_first.empty()) {
      // The manifest's order: modules in pre-order, so the subtree's
      // parameters and those after it start at the floor's first.
      const auto lb = std::lower_bound(params.begin(), params.end(), floor,
                                       [](const auto& p, ModuleId m) { return p.module < m; });
      start = std::max(start, static_cast<std::size_t>(lb - params.begin()));
    } else if (subtree_first[floor] != static_cast<std::size_t>(-1)) {
      start = std::max(start, subtree_first[floor]);
    }
  }
  // A MatMul's weight, stored [in, out], fitting one parameter as stored
  // and another transposed is the transposed one's.
  const auto preferred = [&](absl::Span<const std::int64_t> shape) {
    return !transposed || weight.dims.size() != 2 || shape.size() != 2 ||
           (weight.dims[0] == shape[1] && weight.dims[1] == shape[0]);
  };
  for (std::size_t from : {start, first_unused}) {
    const std::size_t end = std::min(params.size(), from + kAlignWindow);
    for (const bool strict : {true, false}) {
      for (std::size_t j = from; j < end; ++j) {
        if (!used[j] && Fits(i, weight, params[j].spec->shape) &&
            (!strict || preferred(params[j].spec->shape))) {
          return j;
        }
      }
    }
    if (from == first_unused) break;
  }
  return params.size();
}

Pass::Claimed Pass::ClaimedParameters(bool* expanded) {
  // Parameters some initializer is named after are accounted for.
  // Names view the graph's and the manifest's strings.
  Claimed claimed;
  for (const TensorInfo& t : graph_.initializers()) {
    const ModuleId owner = tensors_.ParameterOwner(t.name);
    if (owner == kNoModule) continue;
    const absl::string_view stripped = internal::RuleQueries(rules_).StripValueSuffixes(t.name);
    const std::size_t dot = stripped.rfind('.');
    claimed.emplace(owner, dot == absl::string_view::npos ? stripped : stripped.substr(dot + 1));
  }
  ClaimTiedParameters(&claimed);
  // A call whose result a tool folded into a constant read its parameters
  // then: they are accounted for (an encoder's position table, looked up
  // at fixed positions).
  *expanded = FindFoldedResults();
  for (const auto& [name, call] : folded_) {
    for (absl::string_view read : calls_[call].event->reads) claimed.emplace(calls_[call].module, read);
  }
  return claimed;
}

void Pass::ClaimTiedParameters(Claimed* claimed) const {
  // A tensor tied parameters share, read by a node mapped to another of
  // them, stands for that one's parameter (an input embedding's table
  // named after the output projection it is tied to); when no reader is
  // its owner's, the owner's parameter is left to an unnamed copy (the
  // projection's transposed weight).
  absl::flat_hash_set<absl::string_view> owner_reads;
  std::vector<std::pair<ModuleId, const TensorInfo*>> tied_reads;
  for (std::size_t i = 0; i < n_ && tensors_.AnyShared(); ++i) {
    if (!out_[i].mapped()) continue;
    for (const ValueId v : graph_.node(static_cast<NodeId>(i)).input_values) {
      const TensorInfo* t = v == kNoValue ? nullptr : graph_.initializerOf(v);
      if (t == nullptr || !tensors_.IsShared(t->name)) continue;
      if (tensors_.ParameterOwner(t->name) == out_[i].module) {
        owner_reads.insert(t->name);
      } else {
        tied_reads.emplace_back(out_[i].module, t);
      }
    }
  }
  for (const auto& [module, t] : tied_reads) {
    const absl::string_view local = t->name.substr(t->name.rfind('.') + 1);
    bool tied = false;
    for (const TensorSpec& spec : manifest_.parameters(module)) {
      if (spec.name == local && Compatible(t->dims, spec.shape)) {
        claimed->emplace(module, spec.name);
        tied = true;
      }
    }
    if (tied && !owner_reads.contains(t->name)) claimed->erase({tensors_.ParameterOwner(t->name), local});
  }
}

Pass::ParamTable Pass::UnclaimedParameters(const Claimed& claimed, bool expanded) const {
  ParamTable table;
  std::vector<Param>& params = table.params;
  for (std::size_t m = 0; m < manifest_.size(); ++m) {
    for (const TensorSpec& spec : manifest_.parameters(static_cast<ModuleId>(m))) {
      if (spec.shape.size() >= 2 && !claimed.contains({static_cast<ModuleId>(m), spec.name})) {
        params.push_back({static_cast<ModuleId>(m), &spec});
      }
    }
  }
  if (params.empty()) return table;
  // With forward signatures, in the order the forward first reads them (a
  // model may run its children in another order than it defines them: one
  // tower before the other); parameters it never reads after, in the
  // manifest's order.
  if (expanded) {
    const auto first = FirstReads(manifest_, calls_);
    constexpr std::int64_t kUnread = std::numeric_limits<std::int64_t>::max();
    const auto rank = [&](const Param& p) {
      const ModuleInfo& info = manifest_.module(p.module);
      const std::int64_t at = first[p.module][static_cast<std::size_t>(p.spec - info.parameters.data())];
      return at < 0 ? kUnread : at;
    };
    std::stable_sort(params.begin(), params.end(),
                     [&](const Param& a, const Param& b) { return rank(a) < rank(b); });
    table.subtree_first.assign(manifest_.size(), static_cast<std::size_t>(-1));
    for (std::size_t j = params.size(); j-- > 0;) {
      for (ModuleId m = params[j].module; m != kNoModule; m = manifest_.parent(m)) {
        table.subtree_first[m] = j;
      }
    }
  }
  std::vector<std::size_t>& by_module = table.by_module;
  by_module.resize(params.size());
  for (std::size_t j = 0; j < params.size(); ++j) by_module[j] = j;
  std::stable_sort(by_module.begin(), by_module.end(),
                   [&](std::size_t a, std::size_t b) { return params[a].module < params[b].module; });
  table.used.assign(params.size(), false);
  return table;
}

void Pass::TakeMappedReadersWeights(ParamTable* table, Alignment* alignment) const {
  // A weight whose reader is already mapped is its module's parameter of
  // that shape: accounted for, before any other weight is aligned with it.
  const std::vector<Param>& params = table->params;
  for (const NodeId i : order_) {
    if (!out_[i].mapped() || ops_.IsWeightPassthrough(i) || ops_.FollowsConsumers(i)) continue;
    const TensorInfo* weight = UnnamedWeight(i, nullptr);
    if (weight == nullptr || table->by_initializer.contains(weight->name)) continue;
    const std::size_t match = ParamOf(params, table->by_module, table->used, out_[i].module, i, *weight);
    if (match == params.size()) continue;
    table->used[match] = true;
    table->by_initializer.emplace(weight->name, match);
    // Placed by what its module's forward reads (op_calls.h): a weight the
    // manifest accounts for, which confirms it as an alignment would.
    if (alignment != nullptr) {
      ++alignment->weights;
      ++alignment->aligned;
      alignment->shapes.emplace(params[match].spec->shape.begin(), params[match].spec->shape.end());
    }
  }
}

std::size_t Pass::MatchUnnamedWeight(ParamTable* table, NodeId i, const TensorInfo& weight,
                                     bool as_stored, ModuleId last_named,
                                     std::size_t* first_unused) const {
  const std::vector<Param>& params = table->params;
  if (auto it = table->by_initializer.find(weight.name); it != table->by_initializer.end()) {
    return it->second;
  }
  std::size_t match = params.size();
  if (const ModuleId holder = ConsumersModule(i); holder != kNoModule) {
    match = ParamOf(params, table->by_module, table->used, holder, i, weight);
  }
  if (match == params.size()) {
    while (*first_unused < params.size() && table->used[*first_unused]) ++*first_unused;
    match = WindowMatch(params, table->subtree_first, table->used, *first_unused, last_named, i,
                        weight, as_stored && ops_.ReadsTransposedWeight(i));
    if (match == params.size()) return match;
  }
  table->used[match] = true;
  table->by_initializer.emplace(weight.name, match);
  return match;
}

std::size_t Pass::AlignUnnamedWeights(Alignment* alignment) {
  bool expanded = false;
  const Claimed claimed = ClaimedParameters(&expanded);
  ParamTable table = UnclaimedParameters(claimed, expanded);
  const std::vector<Param>& params = table.params;
  if (params.empty()) return 0;
  if (alignment != nullptr) alignment->parameters = params.size();
  // The module of the last node before this one whose own scope or exporter
  // metadata named it (a quantizer's file keeps them on the nodes it did not
  // replace): an unnamed weight read after it is aligned from that
  // module's parent's subtree on in the manifest's order, when a parameter
  // fits there; else from the first unused one as before.
  std::vector<bool> named(n_, false);
  for (std::size_t i = 0; i < n_; ++i) {
    named[i] = out_[i].mapped() && (out_[i].strategy == Strategy::kExactScope ||
                                    out_[i].strategy == Strategy::kExporterMetadata);
  }
  TakeMappedReadersWeights(&table, alignment);
  absl::flat_hash_set<absl::string_view> counted;  // unnamed weights met
  std::size_t first_unused = 0;
  std::size_t aligned = 0;
  ModuleId last_named = kNoModule;
  for (const NodeId i : order_) {
    if (named[i]) last_named = out_[i].module;
    if (out_[i].mapped() || ops_.IsWeightPassthrough(i) || ops_.FollowsConsumers(i)) continue;
    bool as_stored = false;
    const TensorInfo* weight = UnnamedWeight(i, &as_stored);
    if (weight == nullptr) continue;
    const bool seen =
        table.by_initializer.contains(weight->name) || !counted.insert(weight->name).second;
    if (alignment != nullptr && !seen) ++alignment->weights;
    const std::size_t match =
        MatchUnnamedWeight(&table, i, *weight, as_stored, last_named, &first_unused);
    if (match == params.size()) continue;
    const Param& p = params[match];
    if (alignment != nullptr && !seen) {
      ++alignment->aligned;
      alignment->shapes.emplace(p.spec->shape.begin(), p.spec->shape.end());
    }
    MappingRecord& m = out_[i];
    m.module = p.module;
    m.confidence = kAlignedWeight;
    m.strategy = Strategy::kStructure;
    m.evidence = evidence_->Intern(absl::StrCat("unnamed weight ", weight->name, " aligned by shape and order with ",
                              manifest_.path(p.module), ".", p.spec->name));
    ++aligned;
  }
  return aligned;
}

}  // namespace structure
}  // namespace internal
}  // namespace semmap
