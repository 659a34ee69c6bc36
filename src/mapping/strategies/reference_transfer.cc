#include "mapping/strategies/reference_transfer.h"

#include <algorithm>
#include <utility>

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

}  // namespace

// Long (about 155 lines): three passes over the processed graph that share
// the match table and the counts (paired nodes, then the data movement
// around them, then consumers to a fixed point); each pass is short and
// marked.
TransferStats TransferFromReference(const MappingContext& context, const Graph& reference,
                                    const TransferContext& transfer, const MatchLimits& limits) {
  const Graph& processed = context.graph;
  const Manifest& manifest = context.manifest;
  const Rules& rules = context.rules;
  std::vector<MappingRecord>* mappings = &context.records;
  EvidenceStore* evidence = &context.evidence;
  TransferStats stats;
  const std::vector<MappingRecord>& reference_mappings = *transfer.reference_mappings;
  std::vector<NodeMatch> own_matches;
  if (transfer.matches == nullptr) {
    own_matches = MatchToReference(processed, reference, rules, limits);
  }
  const std::vector<NodeMatch>& matches =
      transfer.matches != nullptr ? *transfer.matches : own_matches;
  std::vector<FusedPart> parts;
  std::vector<ModuleId> origins;
  if (transfer.check != nullptr) {
    // Nodes a tool inserts to feed others (a static quantizer's Quantize /
    // DequantizeLinear pair on every weight and activation, fp16's Casts)
    // pair with nothing by construction: they are not counted.
    std::size_t unpaired = 0;
    std::size_t inserted = 0;
    for (NodeId p = 0; p < static_cast<NodeId>(processed.size()); ++p) {
      if (matches[p].rule != MatchRule::kNone) continue;
      ++(context.ops.FollowsConsumers(p) ? inserted : unpaired);
    }
    const std::size_t nodes = processed.size() - inserted;
    NotePairing(nodes - unpaired, nodes, transfer.check);
  }
  for (NodeId p = 0; p < static_cast<NodeId>(processed.size()); ++p) {
    const NodeMatch& match = matches[p];
    ++stats.by_rule[static_cast<int>(match.rule)];
    if (match.rule == MatchRule::kNone) continue;
    MappingRecord& m = (*mappings)[p];
    if (KeepsOwnAnswer(m)) continue;
    ModuleId module = kNoModule;
    double weakest = 1.0;
    bool agree = true;
    parts.clear();
    origins.clear();
    for (NodeId r : match.reference_nodes) {
      const MappingRecord& rm = reference_mappings[r];
      if (!rm.mapped()) continue;
      if (module != kNoModule && rm.module != module) agree = false;
      module = module == kNoModule ? rm.module : manifest.lowestCommonAncestor(module, rm.module);
      weakest = std::min(weakest, rm.confidence);
      parts.push_back({reference.node(r).op_type, rm.module});
      const absl::Span<const ModuleId> own = transfer.reference_origins->Of(r);
      if (own.empty()) {
        origins.push_back(rm.module);
      } else {
        origins.insert(origins.end(), own.begin(), own.end());
      }
    }
    if (module == kNoModule) continue;
    double factor = kExactPair;
    const Node& first = reference.node(match.reference_nodes.front());
    const ModuleId dominant =
        agree ? kNoModule
              : DominantPart(processed, p, parts, manifest, context.tensors);
    switch (match.rule) {
      case MatchRule::kStructure:
        factor = match.ambiguous ? kAmbiguousPair : kExactPair;
        break;
      case MatchRule::kConstantOf:
        factor = kConstantPair;
        break;
      case MatchRule::kSpan:
        if (match.reference_nodes.size() == 1 &&
            first.op_type == processed.node(p).op_type) {
          factor = kExactPair;  // the same node, renamed
        } else {
          factor = agree ? kSpanOneModule : dominant != kNoModule ? kSpanDominant : kSpanLca;
        }
        break;
      case MatchRule::kDerivedName:
        factor = kDerived;
        break;
      default:
        break;
    }
    const double confidence = factor * weakest;
    if (m.mapped() && m.confidence >= confidence) continue;
    m.module = dominant != kNoModule ? dominant : module;
    m.confidence = confidence;
    m.strategy = Strategy::kReference;
    m.evidence = evidence->Intern(
        match.reference_nodes.size() == 1
            ? absl::StrCat("reference node ", Abbreviate(first.id, 80), " (",
                           RuleWords(match.rule), ")")
            : absl::StrCat("reference: ", RuleWords(match.rule), "; replaced ",
                           match.reference_nodes.size(), " nodes from ",
                           Abbreviate(first.id, 80),
                           dominant != kNoModule ? "; it still does the operation of one" : ""));
    // Shares only where the node replaced several of the export's nodes (a
    // fusion); one node standing for one keeps that node's origins as they
    // are (an exporter's fold, whose parts have no count).
    context.origins.Set(p, origins, /*counted=*/match.reference_nodes.size() > 1);
    ++stats.transferred;
  }

  // Data movement inserted or kept around matched nodes follows them.
  const OpTraits& ops = context.ops;
  absl::flat_hash_set<absl::string_view> graph_outputs(processed.outputs().begin(),
                                                       processed.outputs().end());
  std::vector<NodeId> pending;
  for (NodeId p = static_cast<NodeId>(processed.size()); p-- > 0;) {
    if (!(*mappings)[p].mapped() && (ops.FollowsConsumers(p) || ops.IsWeightPassthrough(p))) {
      pending.push_back(p);  // reverse node order: consumers first
    }
  }
  for (int pass = 0; pass < kMaxConsumerPasses && !pending.empty(); ++pass) {
    std::vector<NodeId> still;
    for (NodeId p : pending) {
      const Node& n = processed.node(p);
      ModuleId module = kNoModule;
      bool agree = true, complete = !n.outputs.empty();
      double weakest = 1.0;
      std::size_t count = 0;
      for (absl::string_view o : n.outputs) {
        if (o.empty()) continue;
        if (graph_outputs.contains(o)) complete = false;
        for (NodeId c : processed.consumers(o, n.subgraph)) {
          const MappingRecord& cm = (*mappings)[c];
          if (!cm.mapped()) {
            complete = false;
            break;
          }
          ++count;
          if (module != kNoModule && cm.module != module) agree = false;
          module =
              module == kNoModule ? cm.module : manifest.lowestCommonAncestor(module, cm.module);
          weakest = std::min(weakest, cm.confidence);
        }
        if (!complete) break;
      }
      if (!complete || count == 0) {
        still.push_back(p);
        continue;
      }
      MappingRecord& m = (*mappings)[p];
      m.module = module;
      m.confidence = (agree ? kConsumersAgree : kConsumersLca) * weakest;
      m.strategy = Strategy::kReference;
      m.evidence = evidence->Intern(absl::StrCat("follows its ", count, " consumer", count == 1 ? "" : "s",
                                " (reference transfer)"));
      ++stats.consumers;
    }
    if (still.size() == pending.size()) break;
    pending = std::move(still);
  }
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
