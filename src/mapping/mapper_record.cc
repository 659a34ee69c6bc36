// The verdicts on a provenance record a model carries (docs/record.md,
// "When the record is used"): SemanticMapper::MapWithRecord and the mapping
// of a record's own graph that lost its names.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/phase_times.h"
#include "base/text.h"
#include "graph/weightless_copy.h"
#include "mapping/mapper_impl.h"
#include "mapping/steps/check_record_answers.h"
#include "mapping/steps/check_reference.h"
#include "mapping/steps/read_record.h"
#include "mapping/steps/repeated_items.h"
#include "semmap/mapper.h"

namespace semmap {

// The record's graph is the model's, but the model lost the names or the
// metadata the export had (a tool that drops node metadata and changes
// nothing else, such as ONNX's version converter): each node takes the
// record's answer for it where that is more confident than its own, once
// the record's answers are found to agree with the model's own
// (steps/check_record_answers.h); else the model maps on its own, with the
// record's manifest (which fits).
absl::StatusOr<SemanticMapper> SemanticMapper::SameGraphWithoutNames(
    const Graph& graph, std::shared_ptr<const Manifest> manifest, const MapperOptions& options,
    const internal::DecodedRecord& record, const ReferenceCheck& check, Provenance* provenance) {
  absl::StatusOr<SemanticMapper> mapped = Create(graph, manifest, options);
  if (!mapped.ok()) return mapped;
  Impl& impl = *mapped->impl_;
  std::vector<ModuleId> answers(record.answers.size(), kNoModule);
  for (std::size_t i = 0; i < answers.size(); ++i) answers[i] = record.answers[i].module;
  impl.record_answers = internal::CheckRecordAnswers(answers, impl.records);
  if (!impl.record_answers.trusted) {
    provenance->record = RecordUse::kRejected;
    provenance->note = impl.record_answers.note;
    return mapped;
  }
  for (std::size_t i = 0; i < impl.records.size() && i < record.answers.size(); ++i) {
    const internal::MappingRecord& answer = record.answers[i];
    internal::MappingRecord& own = impl.records[i];
    if (!answer.mapped() || (own.mapped() && own.confidence >= answer.confidence)) continue;
    own.module = answer.module;
    own.confidence = answer.confidence;
    own.strategy = Strategy::kReference;
    own.evidence = "the record's answer for this node (the record's graph, without its names)";
    const absl::Span<const ModuleId> origins = record.origins.Of(static_cast<NodeId>(i));
    impl.origins.Set(static_cast<NodeId>(i), std::vector<ModuleId>(origins.begin(), origins.end()));
  }
  impl.reference_check = check;
  impl.reference_check.warnings.clear();  // the model's own graph, but nameless
  provenance->record = RecordUse::kUsed;
  provenance->reference = InputSource::kRecord;
  return mapped;
}

// About 120 lines: the record's verdicts in the order they are reached, each
// ending in the mapping that follows from it.
absl::StatusOr<SemanticMapper> SemanticMapper::MapWithRecord(
    const Graph& graph, std::shared_ptr<const Manifest> manifest, const MapperOptions& options,
    const internal::DecodedRecord& record, Provenance* provenance) {
  provenance->record_bytes = record.encoded_bytes;
  provenance->record_generator = record.generator;
  provenance->record_fingerprint = internal::FingerprintText(record.fingerprint);
  const bool own_manifest = manifest != nullptr;
  const bool answers_apply = !own_manifest || internal::SameModules(*manifest, *record.manifest);
  if (!own_manifest) {
    manifest = record.manifest;
    provenance->manifest = InputSource::kRecord;
  }
  const Rules& rules = options.rules != nullptr ? *options.rules : Rules::Default();
  // A rejected record. Of another model (its weights are not this graph's,
  // a deeper model, a manifest that does not fit): the model is mapped
  // exactly as without it. Of this model (the weights are this graph's but
  // its graph does not pair: the other exporter's, or a copy whose names
  // and structure both changed): its manifest still serves where it fits,
  // as a named manifest would; its answers are not carried over.
  auto without = [&](std::string why, bool this_model) -> absl::StatusOr<SemanticMapper> {
    provenance->record = RecordUse::kRejected;
    provenance->note = std::move(why);
    if (own_manifest) return Create(graph, manifest, options);
    if (this_model) {
      absl::StatusOr<SemanticMapper> with_manifest = Create(graph, manifest, options);
      if (!absl::IsFailedPrecondition(with_manifest.status())) return with_manifest;
    }
    provenance->manifest = InputSource::kNone;
    return Create(graph, nullptr, options);
  };
  if (!answers_apply) {
    provenance->record = RecordUse::kIgnored;
    provenance->note = "the named manifest lists other modules than the record's";
    return Create(graph, manifest, options);
  }
  // The record of this very graph (its copy's fingerprint, checked by
  // ReadRecord, is this graph's), named as the export was: its manifest.
  // Its manifest must fit, as on every copy.
  auto of_this_graph = [&](const ReferenceCheck& check) -> absl::StatusOr<SemanticMapper> {
    if (internal::NamingOf(graph).scopes < record.naming.scopes) {
      absl::StatusOr<SemanticMapper> mapped =
          SameGraphWithoutNames(graph, manifest, options, record, check, provenance);
      if (absl::IsFailedPrecondition(mapped.status()) && !own_manifest) {
        return without(
            absl::StrCat("its manifest does not fit the model: ", mapped.status().message()),
            false);
      }
      return mapped;
    }
    absl::StatusOr<SemanticMapper> mapped = Create(graph, manifest, options);
    if (absl::IsFailedPrecondition(mapped.status()) && !own_manifest) {
      return without(
          absl::StrCat("its manifest does not fit the model: ", mapped.status().message()), false);
    }
    if (mapped.ok()) provenance->record = RecordUse::kSource;
    return mapped;
  };
  // The verdicts' own phases, before the pipeline's where the record is
  // used (MapperAccess::Phases).
  internal::PhaseTimes verdicts;
  internal::PhaseClock clock;
  const bool same_fingerprint = record.fingerprint == internal::GraphFingerprint(graph);
  verdicts.Add("fingerprint", clock.Lap());
  if (same_fingerprint) {
    ReferenceCheck same;
    same.checked = true;
    same.same_graph = true;
    return of_this_graph(same);
  }
  absl::StatusOr<ReferenceCheck> check =
      internal::CheckReference(graph, *record.source, rules, &record.naming);
  verdicts.Add("record graph check", clock.Lap());
  if (!check.ok()) {
    return without(absl::StrCat("it was made from another model: ", check.status().message()),
                   false);
  }
  if (check->same_graph) return of_this_graph(*check);
  if (!check->ancestor()) {
    return without(absl::StrCat("it was not made from this graph's source: ",
                                absl::StrJoin(check->warnings, "; ")),
                   true);
  }
  internal::GivenReference given;
  given.graph = &*record.source;
  given.answers = &record.answers;
  given.origins = &record.origins;
  given.naming = &record.naming;
  given.check = &*check;
  absl::StatusOr<SemanticMapper> mapped = Build(graph, manifest, options, &given);
  clock.Lap();
  if (absl::IsFailedPrecondition(mapped.status()) && !own_manifest) {
    return without(absl::StrCat("its manifest does not fit the model: ",
                                mapped.status().message()),
                   false);
  }
  if (!mapped.ok()) return mapped;
  if (!mapped->referenceCheck().ancestor()) {
    return without(absl::StrCat("it was not made from this graph's source: ",
                                absl::StrJoin(mapped->referenceCheck().warnings, "; ")),
                   true);
  }
  if (!mapped->impl_->record_answers.trusted) {
    return without(mapped->impl_->record_answers.note, true);
  }
  // A processed copy keeps its source's weights (renamed at most by a
  // quantizer's suffix, or a few fused): its weights reach every item of a
  // repeated container the source's reach. A record of a deeper model
  // names layers this graph does not have, which its names and structure
  // may still pair with (the next layer's first node answering for this
  // one's final norm).
  ModuleId container = kNoModule;
  std::size_t items = 0;
  const std::size_t unused_here = internal::UnusedRepeatedItems(
      *manifest, internal::WeightOwners(graph, *manifest, rules), &container, &items);
  ModuleId source_container = kNoModule;
  std::size_t source_items = 0;
  const std::size_t unused_there = internal::UnusedRepeatedItems(
      *manifest, internal::WeightOwners(*record.source, *manifest, rules), &source_container,
      &source_items);
  if (unused_here > unused_there) {
    return without(absl::StrCat(
        "it was made from a deeper model: its weights reach ", items - unused_there, " items of \"",
        internal::Abbreviate(manifest->module(container).path, 80), "\", this graph's ",
        items - unused_here),
        false);
  }
  mapped->impl_->phases.Prepend(verdicts);
  mapped->impl_->phases.Add("repeated items check", clock.Lap());
  provenance->record = RecordUse::kUsed;
  provenance->reference = InputSource::kRecord;
  return mapped;
}

}  // namespace semmap
