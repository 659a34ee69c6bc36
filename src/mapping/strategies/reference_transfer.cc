#include "mapping/strategies/reference_transfer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/core/graph_colours.h"
#include "mapping/core/op_traits.h"
#include "mapping/steps/check_reference.h"
#include "mapping/strategies/fused_nodes.h"

namespace semmap {
namespace internal {

namespace {

// Confidence of each rule, multiplied by the reference mapping's own
// (mapping/core/confidence.h).
using confidence::reference::kExactPair;
using confidence::reference::kAmbiguousPair;
using confidence::reference::kConstantPair;
using confidence::reference::kSpanOneModule;
using confidence::reference::kSpanLca;
using confidence::reference::kSpanDominant;
using confidence::reference::kDerived;
using confidence::reference::kConsumersAgree;
using confidence::reference::kConsumersLca;
constexpr int kMaxConsumerPasses = 64;

const char* RuleWords(MatchRule rule) {
  switch (rule) {
    case MatchRule::kSameName: return "same name";
    case MatchRule::kStructure: return "same op reading the same values";
    case MatchRule::kConstantOf: return "constant at the same input of a matched node";
    case MatchRule::kSpan: return "writes its values";
    case MatchRule::kDerivedName: return "name derived from it";
    case MatchRule::kNone: break;
  }
  return "";
}

bool KeepsOwnAnswer(const MappingRecord& m) {
  return m.mapped() &&
         (m.strategy == Strategy::kExactScope || m.strategy == Strategy::kExporterMetadata);
}

// Records the pairing in `check`. Nodes a tool inserts to feed others (a
// static quantizer's Quantize / DequantizeLinear pair on every weight and
// activation, fp16's Casts) pair with nothing by construction: they are
// not counted.
void NotePairingOf(const Graph& processed, const OpTraits& ops,
                   const std::vector<NodeMatch>& matches, ReferenceCheck* check) {
  std::size_t unpaired = 0;
  std::size_t inserted = 0;
  for (NodeId p = 0; p < static_cast<NodeId>(processed.size()); ++p) {
    if (matches[p].rule != MatchRule::kNone) continue;
    ++(ops.FollowsConsumers(p) ? inserted : unpaired);
  }
  const std::size_t nodes = processed.size() - inserted;
  NotePairing(nodes - unpaired, nodes, check);
}

// What the mapped reference nodes a processed node stands for say of it.
// The vectors are reused from one node to the next.
struct Pairing {
  ModuleId module = kNoModule;  // their lowest common ancestor
  double weakest = 1.0;         // the least confidence among them
  bool agree = true;            // one module's, all of them
  std::vector<FusedPart> parts;
  std::vector<ModuleId> origins;  // theirs, or their own origins
};

void ReadPairing(const NodeMatch& match, const Graph& reference, const TransferContext& transfer,
                 const Manifest& manifest, Pairing* pairing) {
  pairing->module = kNoModule;
  pairing->weakest = 1.0;
  pairing->agree = true;
  pairing->parts.clear();
  pairing->origins.clear();
  for (NodeId r : match.reference_nodes) {
    const MappingRecord& rm = (*transfer.reference_mappings)[r];
    if (!rm.mapped()) continue;
    ModuleId& module = pairing->module;
    if (module != kNoModule && rm.module != module) pairing->agree = false;
    module = module == kNoModule ? rm.module : manifest.lowestCommonAncestor(module, rm.module);
    pairing->weakest = std::min(pairing->weakest, rm.confidence);
    pairing->parts.push_back({reference.node(r).op_type, rm.module});
    const absl::Span<const ModuleId> own = transfer.reference_origins->Of(r);
    if (own.empty()) {
      pairing->origins.push_back(rm.module);
    } else {
      pairing->origins.insert(pairing->origins.end(), own.begin(), own.end());
    }
  }
}

// The factor of a pair's confidence by the rule that made it: node `p` of
// `processed` paired with reference nodes whose first is `first`, their
// modules one (`agree`) or one dominating the others (`dominant`).
double PairFactor(const NodeMatch& match, const Node& first, const Graph& processed, NodeId p,
                  bool agree, bool dominant) {
  switch (match.rule) {
    case MatchRule::kStructure:
      return match.ambiguous ? kAmbiguousPair : kExactPair;
    case MatchRule::kConstantOf:
      return kConstantPair;
    case MatchRule::kSpan:
      if (match.reference_nodes.size() == 1 && first.op_type == processed.node(p).op_type) {
        return kExactPair;  // the same node, renamed
      }
      return agree ? kSpanOneModule : dominant ? kSpanDominant : kSpanLca;
    case MatchRule::kDerivedName:
      return kDerived;
    default:
      return kExactPair;
  }
}

// Written into `out`, reused from one node to the next (a distinct text
// per node: no allocation for most).
void PairEvidence(const NodeMatch& match, const Node& first, bool dominant, std::string* out) {
  out->clear();
  constexpr std::size_t kMaxId = 80;
  const std::string abbreviated = first.id.size() > kMaxId ? Abbreviate(first.id, kMaxId) : "";
  const absl::string_view id = first.id.size() > kMaxId ? abbreviated : first.id;
  if (match.reference_nodes.size() == 1) {
    absl::StrAppend(out, "reference node ", id, " (", RuleWords(match.rule), ")");
    return;
  }
  absl::StrAppend(out, "reference: ", RuleWords(match.rule), "; replaced ",
                  match.reference_nodes.size(), " nodes from ", id,
                  dominant ? "; it still does the operation of one" : "");
}

// The first pass: each paired node takes the module of the reference nodes
// it stands for, unless its own answer is kept or more confident.
void TransferPairs(const MappingContext& context, const Graph& reference,
                   const TransferContext& transfer, const std::vector<NodeMatch>& matches,
                   TransferStats* stats) {
  const Graph& processed = context.graph;
  Pairing pairing;
  std::string evidence;
  for (NodeId p = 0; p < static_cast<NodeId>(processed.size()); ++p) {
    const NodeMatch& match = matches[p];
    ++stats->by_rule[static_cast<int>(match.rule)];
    if (match.rule == MatchRule::kNone) continue;
    MappingRecord& m = context.records[p];
    if (KeepsOwnAnswer(m)) continue;
    ReadPairing(match, reference, transfer, context.manifest, &pairing);
    if (pairing.module == kNoModule) continue;
    const Node& first = reference.node(match.reference_nodes.front());
    const ModuleId dominant =
        pairing.agree ? kNoModule
                      : DominantPart(processed, p, pairing.parts, context.manifest, context.tensors);
    const double confidence =
        PairFactor(match, first, processed, p, pairing.agree, dominant != kNoModule) *
        pairing.weakest;
    if (m.mapped() && m.confidence >= confidence) continue;
    m.module = dominant != kNoModule ? dominant : pairing.module;
    m.confidence = confidence;
    m.strategy = Strategy::kReference;
    PairEvidence(match, first, dominant != kNoModule, &evidence);
    // A reference node paired one to one (claimed by one node of P) gives
    // its text to one node: not worth an index entry.
    const bool one_to_one = match.rule == MatchRule::kSameName ||
                            match.rule == MatchRule::kStructure ||
                            match.rule == MatchRule::kConstantOf;
    m.evidence = one_to_one ? context.evidence.Append(evidence) : context.evidence.Intern(evidence);
    // Shares only where the node replaced several of the export's nodes (a
    // fusion); one node standing for one keeps that node's origins as they
    // are (an exporter's fold, whose parts have no count).
    context.origins.Set(p, pairing.origins, /*counted=*/match.reference_nodes.size() > 1);
    ++stats->transferred;
  }
}

// What the consumers of a node say of it: their lowest common ancestor.
struct Consumers {
  ModuleId module = kNoModule;
  bool agree = true;     // one module's, all of them
  double weakest = 1.0;  // the least confidence among them
  std::size_t count = 0;
};

// Whether node `n`'s outputs are no graph outputs and every consumer of
// them is mapped: then `*consumers` says what they are.
bool MappedConsumers(const Graph& processed, const Node& n,
                     const std::vector<MappingRecord>& mappings, const Manifest& manifest,
                     const absl::flat_hash_set<absl::string_view>& graph_outputs,
                     Consumers* consumers) {
  Consumers& c = *consumers;
  bool complete = !n.outputs.empty();
  for (absl::string_view o : n.outputs) {
    if (o.empty()) continue;
    if (graph_outputs.contains(o)) complete = false;
    for (NodeId reader : processed.consumers(o, n.subgraph)) {
      const MappingRecord& cm = mappings[reader];
      if (!cm.mapped()) {
        complete = false;
        break;
      }
      ++c.count;
      if (c.module != kNoModule && cm.module != c.module) c.agree = false;
      c.module = c.module == kNoModule ? cm.module : manifest.lowestCommonAncestor(c.module, cm.module);
      c.weakest = std::min(c.weakest, cm.confidence);
    }
    if (!complete) break;
  }
  return complete && c.count > 0;
}

// The passes after it: data movement inserted or kept around matched nodes
// follows them, consumers first, to a fixed point.
void FollowConsumers(const MappingContext& context, TransferStats* stats) {
  const Graph& processed = context.graph;
  const OpTraits& ops = context.ops;
  std::vector<MappingRecord>& mappings = context.records;
  absl::flat_hash_set<absl::string_view> graph_outputs(processed.outputs().begin(),
                                                       processed.outputs().end());
  std::vector<NodeId> pending;
  for (NodeId p = static_cast<NodeId>(processed.size()); p-- > 0;) {
    if (!mappings[p].mapped() && (ops.FollowsConsumers(p) || ops.IsWeightPassthrough(p))) {
      pending.push_back(p);  // reverse node order: consumers first
    }
  }
  for (int pass = 0; pass < kMaxConsumerPasses && !pending.empty(); ++pass) {
    std::vector<NodeId> still;
    for (NodeId p : pending) {
      Consumers consumers;
      if (!MappedConsumers(processed, processed.node(p), mappings, context.manifest, graph_outputs,
                           &consumers)) {
        still.push_back(p);
        continue;
      }
      MappingRecord& m = mappings[p];
      m.module = consumers.module;
      m.confidence = (consumers.agree ? kConsumersAgree : kConsumersLca) * consumers.weakest;
      m.strategy = Strategy::kReference;
      m.evidence = context.evidence.Intern(absl::StrCat("follows its ", consumers.count, " consumer",
                                                        consumers.count == 1 ? "" : "s",
                                                        " (reference transfer)"));
      ++stats->consumers;
    }
    if (still.size() == pending.size()) break;
    pending = std::move(still);
  }
}

}  // namespace

// Three passes over the processed graph: paired nodes (TransferPairs), then
// the data movement around them, consumers to a fixed point
// (FollowConsumers).
TransferStats TransferFromReference(const MappingContext& context, const Graph& reference,
                                    const TransferContext& transfer, const MatchLimits& limits) {
  std::vector<NodeMatch> own_matches;
  if (transfer.matches == nullptr) {
    own_matches = MatchToReference(context.graph, reference, context.rules, limits);
  }
  const std::vector<NodeMatch>& matches =
      transfer.matches != nullptr ? *transfer.matches : own_matches;
  if (transfer.check != nullptr) NotePairingOf(context.graph, context.ops, matches, transfer.check);
  TransferStats stats;
  TransferPairs(context, reference, transfer, matches, &stats);
  FollowConsumers(context, &stats);
  return stats;
}

std::vector<ModuleId> PairedAnswers(const std::vector<NodeMatch>& matches,
                                    const std::vector<MappingRecord>& reference_mappings,
                                    const std::vector<MappingRecord>& own,
                                    const Manifest& manifest) {
  std::vector<ModuleId> out(matches.size(), kNoModule);
  for (std::size_t p = 0; p < matches.size(); ++p) {
    const ModuleId mine = p < own.size() ? own[p].module : kNoModule;
    ModuleId module = kNoModule;
    for (NodeId r : matches[p].reference_nodes) {
      const MappingRecord& rm = reference_mappings[static_cast<std::size_t>(r)];
      if (!rm.mapped()) continue;
      if (rm.module == mine) {
        module = mine;
        break;
      }
      module = module == kNoModule ? rm.module : manifest.lowestCommonAncestor(module, rm.module);
    }
    out[p] = module;
  }
  return out;
}

std::size_t KeepOwnAnswers(const std::vector<MappingRecord>& own, const Manifest& own_manifest,
                           const Manifest& manifest, bool ancestor,
                           std::vector<MappingRecord>* mappings, EvidenceStore* evidence) {
  const bool same_manifest = &own_manifest == &manifest;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < own.size() && i < mappings->size(); ++i) {
    const MappingRecord& o = own[i];
    MappingRecord& m = (*mappings)[i];
    if (!o.mapped()) continue;
    // A confident own answer gives way to nothing less confident: neither
    // a carried-over answer nor one the inference built on carried-over
    // neighbours.
    const bool certain = o.confidence >= kConfidentFloor && m.confidence < o.confidence;
    if (m.mapped() && m.strategy != Strategy::kReference && !certain) continue;
    if (m.mapped() && !certain &&
        (o.confidence < m.confidence || (ancestor && o.confidence < kConfidentFloor))) {
      continue;
    }
    const ModuleId module =
        same_manifest ? o.module : manifest.find(own_manifest.path(o.module));
    if (module == kNoModule) continue;
    if (m.module == module && m.strategy == o.strategy && m.confidence == o.confidence) continue;
    m.module = module;
    m.confidence = o.confidence;
    m.strategy = o.strategy;
    m.evidence = evidence->Intern(o.evidence);
    ++kept;
  }
  return kept;
}

}  // namespace internal
}  // namespace semmap
