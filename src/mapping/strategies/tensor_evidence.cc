#include "mapping/strategies/tensor_evidence.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "manifest/rule_queries.h"
#include "mapping/confidence.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {
namespace {

// Confidence by kind of evidence (mapping/confidence.h).
using confidence::tensor::kProducedParameter;
using confidence::tensor::kOutputScope;
using confidence::tensor::kWeightRead;
using confidence::tensor::kDisagree;
using confidence::tensor::kViaIdentity;
using confidence::tensor::kRewritten;
constexpr int kMaxChain = 4;
constexpr absl::string_view kRewriteRuleKey = "pkg.onnxscript.rewriter.rule_name";

}  // namespace

TensorEvidence::TensorEvidence(const Graph& graph, const Manifest& manifest,
                               const Rules& rules, const OpTraits& ops,
                               ModuleId root, absl::Span<const std::string> wrapper)
    : graph_(graph), manifest_(manifest), rules_(rules), ops_(ops), root_(root),
      wrapper_(wrapper.begin(), wrapper.end()), resolver_(manifest) {
  const std::string& root_path = manifest.module(root).path;
  if (!root_path.empty()) root_prefix_ = root_path + ".";
  if (!wrapper_.empty()) wrapper_prefix_ = absl::StrJoin(wrapper_, ".") + ".";
}

void TensorEvidence::MapNodes(double factor, std::vector<MappingRecord>* mappings,
                              EvidenceStore* evidence) const {
  for (std::size_t i = 0; i < mappings->size(); ++i) {
    const NodeId id = static_cast<NodeId>(i);
    MappingRecord& m = (*mappings)[i];
    if (m.strategy == Strategy::kExporterMetadata) WidenRewritten(id, &m, evidence);
    if (m.mapped() || ops_.followsConsumers(id)) continue;
    TensorFinding finding;
    if (!ForNode(id, &finding)) continue;
    m.module = finding.module;
    m.confidence = finding.confidence * factor;
    m.strategy = Strategy::kTensorNames;
    m.evidence = evidence->Intern(finding.evidence);
  }
}

ModuleId TensorEvidence::ParameterOwner(absl::string_view value) const {
  // The name as written first: a parameter may end like a suffix the rules
  // strip from derived values ("features.1.0.layer_scale" is no
  // "features.1.0.layer" plus a quantizer's "_scale").
  const ModuleId literal = LiteralOwner(value);
  if (literal != kNoModule) return literal;
  const absl::string_view stripped = internal::RuleQueries(rules_).stripValueSuffixes(value);
  return stripped.size() == value.size() ? kNoModule : LiteralOwner(stripped);
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
  value = internal::RuleQueries(rules_).stripValueSuffixes(value);
  const absl::string_view scope = value.substr(0, value.rfind('/'));
  auto it = scope_cache_.find(scope);
  if (it != scope_cache_.end()) return it->second;
  const ScopePath path = ScopePath::Parse(value);
  const ScopeResolution r = resolver_.Resolve(path.segments(), root_, wrapper_);
  const ModuleId module = r.complete() ? r.module : kNoModule;
  scope_cache_.emplace(std::string(scope), module);
  return module;
}

ModuleId TensorEvidence::WeightOwner(absl::string_view value, int subgraph, int depth,
                                     bool* via_identity) const {
  const ModuleId owner = ParameterOwner(value);
  if (owner != kNoModule || depth >= kMaxChain) return owner;
  const NodeId p = graph_.producer(value, subgraph);
  if (p == kNoNode) return kNoModule;
  const Node& producer = graph_.node(p);
  if (!ops_.isWeightPassthrough(p) || producer.inputs.empty()) return kNoModule;
  if (producer.op_type == "Identity") *via_identity = true;
  return WeightOwner(producer.inputs[0], producer.subgraph, depth + 1, via_identity);
}

bool TensorEvidence::WidenRewritten(NodeId id, MappingRecord* m, EvidenceStore* evidence) const {
  const Node& n = graph_.node(id);
  if (!m->mapped()) return false;
  const bool rewritten = std::any_of(n.metadata.begin(), n.metadata.end(),
                                     [](const auto& kv) { return kv.first == kRewriteRuleKey; });
  if (!rewritten) return false;
  ModuleId module = m->module;
  for (absl::string_view input : n.inputs) {
    const ModuleId owner = input.empty() ? kNoModule : ParameterOwner(input);
    if (owner != kNoModule && !manifest_.isAncestorOrSelf(module, owner)) {
      module = manifest_.lowestCommonAncestor(module, owner);
    }
  }
  if (module == m->module) return false;
  m->evidence = evidence->Intern(absl::StrCat(
      m->evidence, "; rewritten by the exporter's optimizer, reads parameters of ",
      manifest_.module(module).path.empty() ? "<root>" : manifest_.module(module).path,
      "'s subtree: their common ancestor"));
  m->module = module;
  m->confidence = std::min(m->confidence, kRewritten);
  return true;
}

bool TensorEvidence::ForNode(NodeId id, TensorFinding* out) const {
  const Node& n = graph_.node(id);
  ModuleId lca = kNoModule;
  double confidence = 1.0;
  std::size_t sources = 0;
  bool disagree = false;
  std::string first;
  auto add = [&](ModuleId m, double c, absl::string_view what, absl::string_view name) {
    if (m == kNoModule) return;
    if (lca != kNoModule && lca != m) disagree = true;
    lca = lca == kNoModule ? m : manifest_.lowestCommonAncestor(lca, m);
    confidence = std::min(confidence, c);
    if (sources++ == 0) first = absl::StrCat(what, " ", name);
  };
  for (absl::string_view o : n.outputs) {
    add(ParameterOwner(o), kProducedParameter, "produces parameter", o);
    add(ValueScope(o), kOutputScope, "output named", o);
  }
  for (absl::string_view i : n.inputs) {
    if (i.empty()) continue;
    bool via_identity = false;
    const ModuleId owner = WeightOwner(i, n.subgraph, 0, &via_identity);
    add(owner, via_identity ? kViaIdentity : kWeightRead, "reads weight", i);
  }
  if (sources == 0) return false;
  out->module = lca;
  out->confidence = disagree ? std::min(confidence, kDisagree) : confidence;
  out->evidence = sources == 1 ? first
                               : absl::StrCat(disagree ? "lowest common ancestor of " : "",
                                              sources, " tensor names, e.g. ", first);
  return true;
}

}  // namespace internal
}  // namespace semmap
