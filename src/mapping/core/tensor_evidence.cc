#include "mapping/core/tensor_evidence.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/text.h"
#include "graph/exporter_metadata.h"
#include "graph/node_fields.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/core/fusion.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {
namespace {

// Confidence by kind of evidence (mapping/core/confidence.h).
using confidence::tensor::kProducedParameter;
using confidence::tensor::kOutputScope;
using confidence::tensor::kWeightRead;
using confidence::tensor::kDisagree;
using confidence::tensor::kRewritten;
using confidence::tensor::kFusedDominant;
constexpr int kMaxChain = 4;

// The op a TorchScript value name says produced it: "Add" for
// "/enc/layers.0/Add_1_output_0", "LayerNormalization" for
// ".../LayerNormalization_output_0"; empty for other names.
absl::string_view ProducerOpOfValue(absl::string_view value) {
  const std::size_t slash = value.rfind('/');
  if (slash == absl::string_view::npos) return {};
  absl::string_view last = value.substr(slash + 1);
  const std::size_t output = last.rfind("_output_");
  if (output == absl::string_view::npos) return {};
  last = last.substr(0, output);
  const std::size_t underscore = last.rfind('_');
  if (underscore != absl::string_view::npos &&
      std::all_of(last.begin() + underscore + 1, last.end(),
                  [](char c) { return c >= '0' && c <= '9'; }) &&
      underscore + 1 < last.size()) {
    last = last.substr(0, underscore);
  }
  return last;
}

}  // namespace

TensorEvidence::TensorEvidence(const Graph& graph, const Manifest& manifest,
                               const Rules& rules, const OpTraits& ops,
                               ModuleId root, absl::Span<const std::string> wrapper)
    : graph_(graph), manifest_(manifest), rules_(rules), ops_(ops), root_(root),
      wrapper_(wrapper.begin(), wrapper.end()), resolver_(manifest),
      owner_cache_(new std::atomic<ModuleId>[graph.valueCount()]) {
  for (std::size_t v = 0; v < graph.valueCount(); ++v) {
    owner_cache_[v].store(kOwnerUnknown, std::memory_order_relaxed);
  }
  const absl::string_view root_path = manifest.path(root);
  if (!root_path.empty()) root_prefix_ = absl::StrCat(root_path, ".");
  if (!wrapper_.empty()) wrapper_prefix_ = absl::StrJoin(wrapper_, ".") + ".";
  FindSharedTensors();
}

namespace {

// How many times each module's forward ran in the pass the signatures
// record: the root once, a module as often as its callers' recorded calls
// of it, times their own; 0 for one the signatures do not reach.
std::vector<std::size_t> CallCounts(const Manifest& manifest, ModuleId root) {
  std::vector<std::vector<ModuleId>> callers(manifest.size());
  for (std::size_t c = 0; c < manifest.size(); ++c) {
    for (const ForwardEvent& e : manifest.forward(static_cast<ModuleId>(c))) {
      if (e.call != kNoModule && static_cast<std::size_t>(e.call) < manifest.size()) {
        callers[e.call].push_back(static_cast<ModuleId>(c));
      }
    }
  }
  constexpr std::size_t kUnknown = static_cast<std::size_t>(-1);
  std::vector<std::size_t> calls(manifest.size(), kUnknown);
  // Memoised recursion over the callers, bounded in depth (the manifest
  // reader refuses cycles of calls); a count stops growing past any node
  // count that matters.
  constexpr std::size_t kCap = std::size_t{1} << 32;
  const std::function<std::size_t(ModuleId, int)> count = [&](ModuleId m, int depth) -> std::size_t {
    if (calls[m] != kUnknown) return calls[m];
    if (m == root) return calls[m] = 1;
    if (depth > 256) return 0;
    std::size_t n = 0;
    for (ModuleId c : callers[m]) n = std::min(kCap, n + count(c, depth + 1));
    return calls[m] = n;
  };
  for (std::size_t m = 0; m < manifest.size(); ++m) count(static_cast<ModuleId>(m), 0);
  return calls;
}

// Whether node `c` reads value `v` as one of its own inputs (not inside a
// subgraph). A node of many inputs (a Concat of every weight of a module)
// is looked up in a table: searching its inputs for each of them would cost
// their number squared.
class DirectInputs {
 public:
  DirectInputs(const Graph& graph, const NodeFields& nodes) : nodes_(nodes) {
    for (std::size_t n = 0; n < graph.size(); ++n) {
      const absl::Span<const ValueId> inputs = nodes.inputValues(static_cast<NodeId>(n));
      if (inputs.size() <= kSearched) continue;
      for (const ValueId v : inputs) many_.emplace(static_cast<NodeId>(n), v);
    }
  }
  bool Reads(NodeId c, ValueId v) const {
    const absl::Span<const ValueId> inputs = nodes_.inputValues(c);
    if (inputs.size() > kSearched) return many_.contains(std::make_pair(c, v));
    return std::find(inputs.begin(), inputs.end(), v) != inputs.end();
  }

 private:
  static constexpr std::size_t kSearched = 16;
  const NodeFields& nodes_;
  absl::flat_hash_set<std::pair<NodeId, ValueId>> many_;
};

// Per module and local tensor name, the operations of the module's own
// forward reading it: how many, and their distinct op names. Built in one
// pass over every event's reads, so that a module whose forward reads
// thousands of its tensors costs their number, not its square.
class OwnOpReads {
 public:
  OwnOpReads(const Manifest& manifest, bool traced) {
    if (!traced) return;
    absl::flat_hash_set<std::tuple<ModuleId, absl::string_view, absl::string_view>> seen;
    for (std::size_t m = 0; m < manifest.size(); ++m) {
      const ModuleId id = static_cast<ModuleId>(m);
      for (const ForwardEvent& e : manifest.forward(id)) {
        if (e.call != kNoModule) continue;
        for (const absl::string_view name : e.reads) {
          Reads& r = by_tensor_[std::make_pair(id, name)];
          ++r.count;
          if (seen.emplace(id, name, e.op).second) r.ops.push_back(e.op);
        }
      }
    }
  }
  std::size_t Count(ModuleId m, absl::string_view local) const {
    auto it = by_tensor_.find(std::make_pair(m, local));
    return it == by_tensor_.end() ? 0 : it->second.count;
  }
  absl::Span<const absl::string_view> Ops(ModuleId m, absl::string_view local) const {
    auto it = by_tensor_.find(std::make_pair(m, local));
    if (it == by_tensor_.end()) return {};
    return it->second.ops;
  }

 private:
  struct Reads {
    std::size_t count = 0;
    absl::InlinedVector<absl::string_view, 1> ops;
  };
  absl::flat_hash_map<std::pair<ModuleId, absl::string_view>, Reads> by_tensor_;
};

// Whether `spec` (Manifest::findTensor of `info`'s module) is one of its
// parameters rather than a buffer.
bool IsParameter(const ModuleInfo& info, const TensorSpec* spec) {
  return spec != nullptr && spec >= info.parameters.data() &&
         spec < info.parameters.data() + info.parameters.size();
}

// The nodes reading an initializer through pass-through ops (a Transpose,
// a Cast, a DequantizeLinear): the operations that compute with it. One
// walk per initializer; the buffers are reused.
class InitializerReaders {
 public:
  InitializerReaders(const Graph& graph, const OpTraits& ops)
      : graph_(graph), ops_(ops), nodes_(graph), direct_(graph, nodes_) {}

  // Finds the readers of `t`, stopping past `limit`; returns how many it
  // found. `through_identity`: an Identity's readers count too.
  std::size_t Find(const TensorInfo& t, std::size_t limit, bool through_identity) {
    readers_.clear();
    stack_.assign(1, {graph_.value(t.name), 0});
    while (!stack_.empty() && readers_.size() <= limit) {
      const auto [v, depth] = stack_.back();
      stack_.pop_back();
      if (v == kNoValue) continue;
      for (const NodeId c : graph_.consumers(v)) {
        const absl::Span<const ValueId> inputs = nodes_.inputValues(c);
        // A node whose subgraph reads the value (an If, a Loop) computes
        // nothing with it: the subgraph's reader does, and counts itself.
        if (!direct_.Reads(c, v)) continue;
        const absl::Span<const ValueId> outputs = nodes_.outputValues(c);
        if (ops_.IsWeightPassthrough(c) && depth < kMaxChain && !outputs.empty() &&
            !inputs.empty() && inputs[0] == v) {
          // An Identity stands for another parameter equal to this one
          // (TorchScript's de-duplication): its readers are that parameter's.
          if (nodes_.opType(c) == "Identity" && !through_identity) continue;
          stack_.emplace_back(outputs[0], depth + 1);
        } else {
          readers_.insert(c);
        }
      }
    }
    return readers_.size();
  }

  // What the last Find() found.
  const absl::flat_hash_set<NodeId>& readers() const { return readers_; }
  const NodeFields& nodes() const { return nodes_; }

 private:
  const Graph& graph_;
  const OpTraits& ops_;
  const NodeFields nodes_;
  const DirectInputs direct_;
  absl::flat_hash_set<NodeId> readers_;
  std::vector<std::pair<ValueId, int>> stack_;
};

// Without signatures (schema 1), whether the graph shows a module called
// several times: a matrix several matmuls read (rules
// "transposed_weight_ops"), TorchScript's copies of it included (a layer a
// model reuses; tied embeddings are one lookup and one matmul; equal random
// matrices do not happen otherwise).
bool ReusedMatrix(const Graph& graph, const OpTraits& ops, InitializerReaders* readers) {
  for (const TensorInfo& t : graph.initializers()) {
    if (t.subgraph != 0 || t.dims.size() != 2) continue;
    readers->Find(t, 2, true);
    const auto matmuls = std::count_if(readers->readers().begin(), readers->readers().end(),
                                       [&](NodeId c) { return ops.ReadsTransposedWeight(c); });
    if (matmuls > 1) return true;
  }
  return false;
}

// (Local name, shape) of parameters.
using NamedShapes = absl::flat_hash_set<std::pair<absl::string_view, std::vector<std::int64_t>>>;

// Whether a read of initializer `t` (parameter `local` of `owner`) that no
// op of the owner's reading it may export, among the readers `readers`
// found of it, is a tied module's: when a module that ran has an unnamed
// parameter of that name and shape (`unnamed`; an input embedding tied to
// the output projection). Matrices only: equal random vectors are no tie,
// but a bias and a norm's share shapes.
bool ReadByTiedModule(const TensorInfo& t, ModuleId owner, absl::string_view local,
                      const NamedShapes& unnamed, const OwnOpReads& own_reads,
                      const InitializerReaders& readers, const RuleQueries& queries) {
  if (t.dims.size() < 2 ||
      !unnamed.contains(std::make_pair(local, std::vector<std::int64_t>(t.dims.begin(), t.dims.end())))) {
    return false;
  }
  const absl::Span<const absl::string_view> owner_ops = own_reads.Ops(owner, local);
  absl::flat_hash_map<std::size_t, bool> may_by_op_type;  // asked once per op type
  for (const NodeId c : readers.readers()) {
    const absl::string_view op_type = readers.nodes().opType(c);
    if (!queries.ExportedByAnyOp(op_type)) continue;
    auto [may, fresh] = may_by_op_type.try_emplace(readers.nodes().opTypeIndex(c), false);
    if (fresh) {
      may->second = std::any_of(owner_ops.begin(), owner_ops.end(), [&](absl::string_view op) {
        return queries.MayExportAs(op, op_type);
      });
    }
    if (!may->second) return true;
  }
  return false;
}

// Tied parameters: (local name, shape) of the parameters of modules that
// ran (`calls`: CallCounts) which no initializer is named after.
NamedShapes UnnamedParameters(const Graph& graph, const Manifest& manifest,
                              const TensorEvidence& tensors, const std::vector<std::size_t>& calls) {
  NamedShapes unnamed;
  absl::flat_hash_set<std::pair<ModuleId, absl::string_view>> named;
  for (const TensorInfo& t : graph.initializers()) {
    const ModuleId owner = t.subgraph == 0 ? tensors.LiteralOwner(t.name) : kNoModule;
    if (owner != kNoModule) named.emplace(owner, t.name.substr(t.name.rfind('.') + 1));
  }
  for (std::size_t m = 0; m < manifest.size(); ++m) {
    if (calls[m] == 0) continue;
    for (const TensorSpec& p : manifest.parameters(static_cast<ModuleId>(m))) {
      if (!named.contains(std::make_pair(static_cast<ModuleId>(m), absl::string_view(p.name)))) {
        unnamed.emplace(p.name, std::vector<std::int64_t>(p.shape.begin(), p.shape.end()));
      }
    }
  }
  return unnamed;
}

// For initializer `t`, parameter `local` of a module (`info`) its parent's
// recorded forward never calls, so that it did not run (a seq2seq model's
// `shared` embedding, which the encoder and the decoder each read through
// an embedding of their own, tied to it): whether its reads are of a tied
// parameter, which a module that ran has under that name and shape with no
// initializer named after it (`unnamed`). Else they are the parent's own
// (an attention reading its output projection's weight without calling
// it).
bool ReadForIdleModule(const TensorInfo& t, const ModuleInfo& info, absl::string_view local,
                       const Manifest& manifest, const std::vector<std::size_t>& calls,
                       const NamedShapes& unnamed, InitializerReaders* readers) {
  const bool idle = !info.traced && info.parent != kNoModule && manifest.traced(info.parent) &&
                    calls[info.parent] > 0;
  const std::vector<std::int64_t> dims(t.dims.begin(), t.dims.end());
  return idle && unnamed.contains(std::make_pair(local, dims)) && readers->Find(t, 0, false) > 0;
}

}  // namespace

// Per parameter-named initializer of the main graph, in named steps: a
// module that did not run (ReadForIdleModule), more readers than the
// owner's forward accounts for, a reader the owner's ops cannot export
// (ReadByTiedModule).
void TensorEvidence::FindSharedTensors() {
  bool traced = false;
  for (const ModuleInfo& info : manifest_.modules()) traced = traced || info.traced;
  const std::vector<std::size_t> calls = traced ? CallCounts(manifest_, root_) : std::vector<std::size_t>();
  InitializerReaders readers(graph_, ops_);
  // No signatures (schema 1): a parameter is taken to be read once, by a
  // module called once, unless the graph shows a module called several
  // times.
  if (!traced && ReusedMatrix(graph_, ops_, &readers)) return;
  const NamedShapes unnamed =
      traced ? UnnamedParameters(graph_, manifest_, *this, calls) : NamedShapes();
  const OwnOpReads own_reads(manifest_, traced);
  const internal::RuleQueries queries(rules_);
  for (const TensorInfo& t : graph_.initializers()) {
    if (t.subgraph != 0) continue;
    const ModuleId owner = LiteralOwner(t.name);
    if (owner == kNoModule) continue;
    const ModuleInfo& info = manifest_.module(owner);
    const absl::string_view local = t.name.substr(t.name.rfind('.') + 1);
    if (traced && calls[owner] == 0) {
      if (ReadForIdleModule(t, info, local, manifest_, calls, unnamed, &readers)) {
        shared_.insert(t.name);
      }
      continue;
    }
    const std::size_t reads = traced ? own_reads.Count(owner, local)
                                     : IsParameter(info, manifest_.findTensor(owner, local));
    if (reads == 0) continue;
    const std::size_t expected = reads * (traced ? calls[owner] : 1);
    if (readers.Find(t, expected, false) > expected) {
      shared_.insert(t.name);
      continue;
    }
    // The readers as Find() found them above.
    if (traced && ReadByTiedModule(t, owner, local, unnamed, own_reads, readers, queries)) {
      shared_.insert(t.name);
    }
  }
}

void TensorEvidence::WidenRewrittenNodes(std::vector<MappingRecord>* mappings,
                                         EvidenceStore* evidence, OriginTable* origins) const {
  for (std::size_t i = 0; i < mappings->size(); ++i) {
    MappingRecord& m = (*mappings)[i];
    if (m.strategy == Strategy::kExporterMetadata) {
      WidenRewritten(static_cast<NodeId>(i), &m, evidence, origins);
    }
  }
}

void TensorEvidence::MapNodes(double factor, std::vector<MappingRecord>* mappings,
                              EvidenceStore* evidence, OriginTable* origins) const {
  for (std::size_t i = 0; i < mappings->size(); ++i) {
    const NodeId id = static_cast<NodeId>(i);
    MappingRecord& m = (*mappings)[i];
    if (m.mapped() || ops_.FollowsConsumers(id)) continue;
    TensorFinding finding;
    if (!ForNode(id, &finding)) continue;
    if (!finding.origins.empty()) origins->Set(id, finding.origins);
    m.module = finding.module;
    m.confidence = finding.confidence * factor;
    m.strategy = Strategy::kTensorNames;
    m.evidence = evidence->Intern(finding.evidence);
  }
}

bool TensorEvidence::NamesManifest(std::size_t share) const {
  std::size_t params = 0;
  for (const ModuleInfo& info : manifest_.modules()) params += info.parameters.size();
  std::size_t named = 0;
  for (const TensorInfo& t : graph_.initializers()) {
    if (ParameterOwner(t.name) != kNoModule) ++named;
  }
  return params > 0 && named * share >= params;
}

ModuleId TensorEvidence::ParameterOwner(absl::string_view value) const {
  const ModuleId owner = SuffixedOwner(value);
  if (owner != kNoModule) return owner;
  // A tensor a tool named with the parameter's name inside a longer one (a
  // quantizer's "q_output_<parameter>_1", an inliner's prefix): the
  // parameter's module owns it.
  const absl::string_view embedded = EmbeddedParameter(value);
  return embedded.empty() ? kNoModule : LiteralOwner(embedded);
}

absl::string_view TensorEvidence::EmbeddedParameter(absl::string_view value) const {
  return FindEmbeddedName(value, ParameterLikeName, [this](absl::string_view part) {
    return LiteralOwner(part) != kNoModule;
  });
}

ModuleId TensorEvidence::SuffixedOwner(absl::string_view value) const {
  // A scoped value name ("/m/Add_output_0") owns nothing, and neither does
  // what the rules strip from its end: a part that starts as it does, or
  // nothing (LiteralOwner). Most of a graph's values are such.
  if (!value.empty() && value.front() == '/') return kNoModule;
  // The name as written first: a parameter may end like a suffix the rules
  // strip from derived values ("features.1.0.layer_scale" is no
  // "features.1.0.layer" plus a quantizer's "_scale").
  const ModuleId literal = LiteralOwner(value);
  if (literal != kNoModule) return literal;
  const internal::RuleQueries rules(rules_);
  const absl::string_view stripped = rules.StripValueSuffixes(value);
  if (stripped.size() != value.size()) {
    if (const ModuleId owner = LiteralOwner(stripped); owner != kNoModule) return owner;
  }
  // A tensor an exporter derived from a parameter and named after it (the
  // bias it folded into a Conv, "<weight>_bias"), quantized or not.
  const absl::string_view base = rules.DerivedFrom(stripped);
  return base.size() == stripped.size() ? kNoModule : LiteralOwner(base);
}

ModuleId TensorEvidence::LiteralOwner(absl::string_view value) const {
  if (value.empty() || value.front() == '/') return kNoModule;
  if (!wrapper_prefix_.empty()) {
    if (!absl::ConsumePrefix(&value, wrapper_prefix_)) return kNoModule;
  }
  if (root_prefix_.empty()) return manifest_.ownerOfTensor(value);
  return manifest_.ownerOfTensor(absl::StrCat(root_prefix_, value));
}

ModuleId TensorEvidence::ValueScope(absl::string_view value) const {
  if (value.empty() || value.front() != '/') return kNoModule;
  value = internal::RuleQueries(rules_).StripValueSuffixes(value);
  const absl::string_view scope = value.substr(0, value.rfind('/'));
  auto it = scope_cache_.find(scope);
  if (it != scope_cache_.end()) return it->second;
  const ScopePath path = ScopePath::Parse(value);
  const ScopeResolution r = resolver_.Resolve(path.segments(), root_, wrapper_);
  const ModuleId module = r.complete() ? r.module : kNoModule;
  scope_cache_.emplace(std::string(scope), module);
  return module;
}

ModuleId TensorEvidence::OwnerOfValue(ValueId v, absl::string_view name) const {
  if (v < 0) return ParameterOwner(name);
  std::atomic<ModuleId>& slot = owner_cache_[static_cast<std::size_t>(v)];
  ModuleId owner = slot.load(std::memory_order_relaxed);
  if (owner == kOwnerUnknown) {
    // Two threads asking at once compute the same answer.
    owner = ParameterOwner(name);
    slot.store(owner, std::memory_order_relaxed);
  }
  return owner;
}

ModuleId TensorEvidence::WeightOwner(absl::string_view value, ValueId v, int depth) const {
  if (IsShared(value)) return kNoModule;
  const ModuleId owner = OwnerOfValue(v, value);
  if (owner != kNoModule || depth >= kMaxChain) return owner;
  const NodeId p = graph_.producer(v);
  if (p == kNoNode) return kNoModule;
  const Node producer = graph_.node(p);
  // An Identity whose output no parameter names stands for another
  // parameter equal to its input (TorchScript's de-duplication, its name
  // stripped): the input's name says nothing of it.
  if (!ops_.IsWeightPassthrough(p) || producer.inputs.empty() || producer.op_type == "Identity") {
    return kNoModule;
  }
  return WeightOwner(producer.inputs[0], producer.input_values[0], depth + 1);
}

bool TensorEvidence::WidenRewritten(NodeId id, MappingRecord* m, EvidenceStore* evidence,
                                    OriginTable* origins) const {
  if (!m->mapped()) return false;
  if (!RewrittenByExporter(NodeFields(graph_).metadata(id))) return false;
  const Node& n = graph_.node(id);
  std::vector<ModuleId> owners;
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    // Through a quantizer's DequantizeLinear (a QDQ file keeps the metadata).
    const absl::string_view input = n.inputs[k];
    const ModuleId owner = input.empty() ? kNoModule : WeightOwner(input, n.input_values[k], 0);
    if (owner != kNoModule && owner != m->module &&
        std::find(owners.begin(), owners.end(), owner) == owners.end()) {
      owners.push_back(owner);
    }
  }
  if (owners.empty()) return false;
  // The parts: the metadata's module and the owners, but a module that
  // holds another part (a wider stack than the parameters' owner).
  std::vector<ModuleId> parts = owners;
  parts.push_back(m->module);
  std::vector<ModuleId> distinct;
  for (ModuleId a : parts) {
    const bool holds_another = std::any_of(parts.begin(), parts.end(), [&](ModuleId b) {
      return b != a && manifest_.isAncestorOrSelf(a, b);
    });
    if (!holds_another) distinct.push_back(a);
  }
  origins->Set(id, distinct);
  const bool one_owner = owners.size() == 1;
  ModuleId module = one_owner ? owners.front() : m->module;
  if (!one_owner) {
    for (ModuleId owner : owners) module = manifest_.lowestCommonAncestor(module, owner);
  }
  const absl::string_view path = manifest_.path(module);
  m->evidence = evidence->Intern(absl::StrCat(
      m->evidence, "; rewritten by the exporter's optimizer, ",
      one_owner ? "computes with the parameters of " : "reads parameters of ",
      path.empty() ? "<root>" : path,
      one_owner ? ": that module's operation, the rest folded into it"
                : "'s subtree: their common ancestor"));
  m->module = module;
  m->confidence = std::min(m->confidence, kRewritten);
  return true;
}

// Long (about 65 lines): the three kinds of names, then the fused-node
// reading of the output names, which needs all of them.
bool TensorEvidence::ForNode(NodeId id, TensorFinding* out) const {
  const Node& n = graph_.node(id);
  ModuleId lca = kNoModule;
  double confidence = 1.0;
  std::size_t sources = 0;
  bool disagree = false;
  std::string first;
  // The modules of the ops the output names name, and of the weights read.
  std::vector<FusedPart> produced_by;
  std::vector<ModuleId> weights;
  auto add = [&](ModuleId m, double c, absl::string_view what, absl::string_view name) {
    if (m == kNoModule) return;
    if (lca != kNoModule && lca != m) disagree = true;
    lca = lca == kNoModule ? m : manifest_.lowestCommonAncestor(lca, m);
    confidence = std::min(confidence, c);
    if (sources++ == 0) first = absl::StrCat(what, " ", name);
  };
  for (std::size_t k = 0; k < n.outputs.size(); ++k) {
    const absl::string_view o = n.outputs[k];
    add(OwnerOfValue(n.output_values[k], o), kProducedParameter, "produces parameter", o);
    const ModuleId scope = ValueScope(o);
    add(scope, kOutputScope, "output named", o);
    const absl::string_view op = scope == kNoModule ? absl::string_view() : ProducerOpOfValue(o);
    if (!op.empty()) produced_by.push_back({op, scope});
  }
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    const absl::string_view i = n.inputs[k];
    if (i.empty()) continue;
    const ModuleId owner = WeightOwner(i, n.input_values[k], 0);
    add(owner, kWeightRead, "reads weight", i);
    if (owner != kNoModule) weights.push_back(owner);
  }
  if (sources == 0) return false;
  out->module = lca;
  out->confidence = disagree ? std::min(confidence, kDisagree) : confidence;
  out->evidence = sources == 1 ? first
                               : absl::StrCat(disagree ? "lowest common ancestor of " : "",
                                              sources, " tensor names, e.g. ", first);
  out->origins.clear();
  // A fusion that kept the value names of parts of several modules.
  const bool fused = std::any_of(produced_by.begin(), produced_by.end(), [&](const auto& p) {
    return p.module != produced_by.front().module;
  });
  if (!disagree || !fused) return true;
  for (const FusedPart& p : produced_by) out->origins.push_back(p.module);
  out->origins.insert(out->origins.end(), weights.begin(), weights.end());
  const ModuleId dominant = DominantModule(n.op_type, produced_by, weights, manifest_);
  if (dominant == kNoModule) return true;
  // The dominant part's op: of its module's parts, the one the op type
  // carries most of.
  std::size_t best = 0;
  for (const FusedPart& p : produced_by) {
    if (p.module == dominant) best = std::max(best, OpTypeOverlap(n.op_type, p.op_type));
  }
  absl::string_view op;
  for (const FusedPart& p : produced_by) {
    if (p.module == dominant && OpTypeOverlap(n.op_type, p.op_type) == best) op = p.op_type;
  }
  out->module = dominant;
  out->confidence = std::min(confidence, kFusedDominant);
  out->evidence = absl::StrCat("fused ", n.op_type, ": still the ", op, " of ",
                               manifest_.path(dominant), "; ", sources,
                               " tensor names, e.g. ", first);
  return true;
}

}  // namespace internal
}  // namespace semmap
