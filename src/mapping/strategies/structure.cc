// The structural strategy: the pass's set-up and its phases in order
// (structure_pass.h), and the choice between two orders.
#include "mapping/strategies/structure.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "graph/node_fields.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/strategies/forward_signature.h"
#include "mapping/strategies/op_calls.h"
#include "mapping/strategies/structure_pass.h"

namespace semmap {
namespace internal {
namespace structure {

Pass::Pass(const MappingContext& context, const std::vector<bool>& shape,
           std::vector<MappingRecord>* mappings, const OpCallPlaces* places)
    : graph_(context.graph),
      manifest_(context.manifest),
      rules_(context.rules),
      ops_(context.ops),
      tensors_(context.tensors),
      shape_(shape),
      places_(places != nullptr && !places->empty() ? places : nullptr),
      placed_calls_left_(kMaxPlacedGap + kPlacedCallsPerNode * context.graph.size()),
      out_(*mappings),
      evidence_(&context.evidence),
      n_(context.graph.size()) {
  const Manifest& manifest = manifest_;
  const Rules& rules = rules_;
  library_.resize(manifest.size());
  module_ops_.resize(manifest.size());
  params_below_.assign(manifest.size(), false);
  // Both rules read only the module's classes: asked once per distinct
  // pair (a model has few classes and many modules).
  struct ClassRules {
    bool library = false;
    int module_ops = -1;
  };
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, ClassRules> by_class;
  for (std::size_t m = manifest.size(); m-- > 0;) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(m));
    auto known = by_class.try_emplace(std::make_pair(absl::string_view(info.class_name),
                                                     absl::string_view(info.qualified_class)));
    if (known.second) {
      known.first->second = {internal::RuleQueries(rules).IsLibraryModule(info), internal::RuleQueries(rules).ModuleOpsRule(info)};
    }
    // A library module holding parameters of its own beside children
    // (an attention with its packed projection weight and an output
    // Linear) runs ops of its own between theirs: it can own a node.
    library_[m] = known.first->second.library && !(!info.children.empty() && !info.parameters.empty());
    module_ops_[m] = info.parameters.empty() ? known.first->second.module_ops : -1;
    if (!info.parameters.empty()) params_below_[m] = true;
    if (params_below_[m] && info.parent != kNoModule) params_below_[info.parent] = true;
  }
  op_children_.resize(manifest.size());
  for (std::size_t m = 0; m < manifest.size(); ++m) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(m));
    if (!params_below_[m] && module_ops_[m] >= 0 && info.parent != kNoModule) {
      op_children_[info.parent].push_back(static_cast<ModuleId>(m));
    }
  }
}

// Long (about 85 lines): the phases in the order they depend on each other
// (the order, the alignment, the anchors, the gaps, the hints), each a few
// lines calling structure_order.cc, structure_align.cc or structure_gaps.cc.
StructureCounts Pass::Run(bool creation_order) {
  StructureCounts counts;
  // Nothing to do for an export whose names answered every node.
  bool any = false;
  for (std::size_t i = 0; i < n_ && !any; ++i) any = Candidate(static_cast<NodeId>(i));
  if (!any) return counts;
  const bool named = ManifestFits();
  // Names that carry the exporter's creation counter give back the
  // order of the export itself, whatever a tool did to the file's order.
  if (creation_order) {
    SetOrder(CreationOrder(&counts.creation_order, !ForwardSignatures(manifest_, rules_, n_).available()));
  } else {
    SetOrder(FileOrder());
  }
  if (named) {
    counts.aligned_weights = AlignUnnamedWeights(nullptr);
  } else {
    // No initializer name confirms the manifest (every weight anonymous:
    // a CNN whose BatchNorms were folded into its Convs): the alignment
    // must confirm it by itself, or nothing is inferred.
    const std::vector<MappingRecord> before = out_;
    Alignment alignment;
    counts.aligned_weights = AlignUnnamedWeights(&alignment);
    if (!alignment.Confirms()) {
      out_ = before;
      counts.aligned_weights = 0;
      return counts;
    }
  }
  NameFamilies();
  anchored_.assign(n_, false);
  for (std::size_t i = 0; i < n_; ++i) {
    const MappingRecord& m = out_[i];
    anchored_[i] = m.mapped() && m.confidence >= 0.5 && m.strategy != Strategy::kNeighbourhood &&
                   m.strategy != Strategy::kOpRule;
  }
  // The file's node order, or a re-linearisation of the graph when the
  // file was re-sorted by a tool: whichever agrees better with the
  // manifest's module order.
  counts.order_agreement = OrderAgreement();
  if (counts.order_agreement < 1.0) {
    std::vector<NodeId> saved = order_;
    SetOrder(DepthFirstOrder());
    const double agreement = OrderAgreement();
    if (agreement >= counts.order_agreement + kRelinearisedMargin) {
      counts.order_agreement = agreement;
      counts.relinearised = true;
    } else {
      SetOrder(std::move(saved));
    }
  }
  factor_ = counts.order_agreement < kOrderAgreementFloor ? kDisorderFactor : 1.0;
  BuildBuckets();
  first_anchor_.assign(manifest_.size(), n_);
  for (NodeId i : order_) {
    if (anchored_[i]) first_anchor_[out_[i].module] = std::min(first_anchor_[out_[i].module], pos_[i]);
  }
  if (const ForwardSignatures signatures(manifest_, rules_, n_); signatures.available()) {
    for (const std::vector<NodeId>& bucket : buckets_) {
      counts.signature_matches += Signatures(bucket, signatures);
    }
  }
  OnlyRunner();
  for (std::vector<NodeId>& bucket : buckets_) {
    ModuleOpRegions(bucket);
    Heads(bucket);
    Tails(bucket);
  }
  ComputeStarts();
  for (std::vector<NodeId>& bucket : buckets_) Intervals(bucket);
  // The module at each position, for the neighbourhood: only from an
  // order that agrees well with the manifest's.
  if (factor_ == 1.0) {
    counts.hints.library = library_;
    counts.hints.next_module.assign(n_, kNoModule);
    for (const std::vector<NodeId>& bucket : buckets_) {
      ModuleId next = kNoModule;
      for (std::size_t k = bucket.size(); k-- > 0;) {
        counts.hints.next_module[bucket[k]] = next;
        if (Settled(bucket[k])) next = out_[bucket[k]].module;
      }
    }
  }
  return counts;
}

std::size_t Pass::EdgesAgainstOrder() const {
  std::size_t against = 0;
  for (const NodeId i : order_) {
    for (const ValueId v : NodeFields(graph_).inputValues(i)) {
      const NodeId p = graph_.producer(v);
      against += p != kNoNode && pos_[p] > pos_[i];
    }
  }
  return against;
}

double Pass::FollowsPlaces() const {
  if (places_ == nullptr) return -1.0;
  const std::vector<std::int64_t>& places = places_->place;
  std::size_t pairs = 0, kept = 0;
  std::int64_t last = -1;
  for (const NodeId i : order_) {
    if (places[i] < 0) continue;
    if (last >= 0) {
      ++pairs;
      kept += places[i] >= last;
    }
    last = places[i];
  }
  return pairs == 0 ? -1.0 : static_cast<double>(kept) / static_cast<double>(pairs);
}

bool Pass::Candidate(NodeId i) const {
  return !out_[i].mapped() && !ops_.FollowsConsumers(i) && !shape_[i] &&
         !NodeFields(graph_).inputs(i).empty();
}

void Pass::Assign(NodeId i, ModuleId module, double confidence, std::string evidence) {
  MappingRecord& m = out_[i];
  m.module = module;
  m.confidence = confidence * factor_;
  m.strategy = Strategy::kStructure;
  m.evidence = evidence_->Intern(std::move(evidence));
}

}  // namespace structure


StructureCounts InferFromStructure(const MappingContext& context, const std::vector<bool>& shape) {
  std::vector<MappingRecord>* mappings = &context.records;
  const bool signatures = ForwardSignatures(context.manifest, context.rules).available();
  // Names that number the op call a node computes place it outright
  // (op_calls.h); both orders below start from those places.
  const OpCallPlaces places = signatures ? PlaceOpCalls(context, shape) : OpCallPlaces();
  // Only some nodes carry a creation counter (those the exporter created
  // itself; the others sort after their latest producer), so the order it
  // gives can be worse than the file's. Both are tried when the counters
  // apply, and the one kept is, in turn:
  //   - the one keeping the order of the nodes' places (op_calls.h) more
  //     often, then the one running fewer data-flow edges backwards (the
  //     counters put a node the exporter's optimizer rebuilt after the
  //     nodes it feeds), when places are known;
  //   - with forward signatures, the one whose gaps they explain better;
  //     without (schema-1 manifests), the one whose weight-anchored nodes
  //     follow the manifest's module order more often (OrderAgreement);
  //   - on a tie, the counters'.
  std::vector<MappingRecord> file = *mappings;
  structure::Pass by_counters(context, shape, mappings, &places);
  const StructureCounts counts = by_counters.Run(true);
  if (!counts.creation_order ||
      (signatures && places.empty() && counts.signature_matches == 0)) {
    return counts;
  }
  structure::Pass by_file(context, shape, &file, &places);
  const StructureCounts in_file = by_file.Run(false);
  bool file_better = signatures ? in_file.signature_matches > counts.signature_matches
                                : in_file.order_agreement > counts.order_agreement;
  if (!places.empty()) {
    const double kept_counters = by_counters.FollowsPlaces(), kept_file = by_file.FollowsPlaces();
    const std::size_t back_counters = by_counters.EdgesAgainstOrder();
    const std::size_t back_file = by_file.EdgesAgainstOrder();
    if (kept_counters != kept_file) {
      file_better = kept_file > kept_counters;
    } else if (back_counters != back_file) {
      file_better = back_file < back_counters;
    }
  }
  if (!file_better) return counts;
  *mappings = std::move(file);
  return in_file;
}

}  // namespace internal
}  // namespace semmap
