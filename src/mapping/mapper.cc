#include "semmap/mapper.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/parallel.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/core/evidence_store.h"
#include "mapping/core/mapper_access.h"
#include "mapping/core/mapping_context.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/origin_table.h"
#include "mapping/core/tensor_evidence.h"
#include "mapping/mapper_impl.h"
#include "mapping/steps/assess_fit.h"
#include "mapping/steps/bind_root.h"
#include "mapping/steps/check_record_answers.h"
#include "mapping/steps/check_reference.h"
#include "mapping/steps/group_scopes.h"
#include "mapping/steps/read_graph_kind.h"
#include "mapping/steps/read_record.h"
#include "mapping/steps/resolve_scopes.h"
#include "mapping/strategies/fused_nodes.h"
#include "mapping/strategies/neighbourhood.h"
#include "mapping/strategies/reference_match.h"
#include "mapping/strategies/reference_transfer.h"
#include "mapping/strategies/structure.h"

namespace semmap {
namespace {

// The last step: unmapped nodes get confidence 0 and a reason. With a
// manifest, mapped ones get the confidence the rules' calibration reports
// for their strategy's raw one (the steps compare raw confidences, so this
// runs after all of them); without one, what was not measured stays raw.
void FinishMappings(const Rules& rules, bool calibrate, GraphKind kind,
                    std::vector<internal::MappingRecord>* records) {
  const internal::RuleQueries queries(rules);
  for (internal::MappingRecord& m : *records) {
    if (m.mapped()) {
      if (calibrate) m.confidence = queries.Calibrated(m.strategy, m.confidence, kind);
      continue;
    }
    m.confidence = 0.0;
    m.strategy = Strategy::kUnmapped;
    if (m.evidence.empty()) m.evidence = "no scope and no mapped neighbour";  // a literal
  }
}

// The inference after the name steps: tensor names (their confidence
// times `factor`), then for nodes still without evidence the graph's
// structure and execution order, then their neighbours. `shape` marks the
// shape computations (ShapeComputations).
void Infer(const internal::MappingContext& context, const std::vector<bool>& shape, double factor,
           const MapperOptions& options) {
  context.tensors.MapNodes(factor, &context.records, &context.evidence, &context.origins);
  const internal::StructureCounts structure = internal::InferFromStructure(context, shape);
  internal::InferFromNeighbourhood(context, shape, structure.hints,
                                   options.max_neighbourhood_passes);
}

// With a reference and a named manifest, the graph's answers on its own
// evidence: the name steps' answers, shared with the mapping that carries
// the reference's over, then the inference alone.
struct OwnAnswers {
  explicit OwnAnswers(std::vector<internal::MappingRecord> from_names)
      : records(std::move(from_names)) {}
  std::vector<internal::MappingRecord> records;
  internal::EvidenceStore evidence;
  internal::OriginTable origins;
};

}  // namespace

SemanticMapper::SemanticMapper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SemanticMapper::SemanticMapper(SemanticMapper&&) noexcept = default;
SemanticMapper& SemanticMapper::operator=(SemanticMapper&&) noexcept = default;
SemanticMapper::~SemanticMapper() = default;

absl::StatusOr<SemanticMapper> SemanticMapper::Create(const Graph& graph,
                                                      const Manifest* manifest,
                                                      const MapperOptions& options) try {
  return Create(graph, manifest == nullptr ? nullptr : std::make_shared<const Manifest>(*manifest),
                options);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory("the manifest", "copying");
}

namespace {

// Create()'s errors as Open() words them, naming the files at fault.
absl::Status OpenError(const absl::Status& status, const std::string& model_path,
                       const std::string& manifest_label, const std::string& reference_path) {
  if (!reference_path.empty() && absl::IsInvalidArgument(status)) {
    return absl::InvalidArgumentError(
        absl::StrCat(model_path, ": reference ", reference_path, ": ", status.message()));
  }
  if (absl::IsFailedPrecondition(status) && !manifest_label.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        model_path, ": manifest ", manifest_label, " is of another model: ", status.message()));
  }
  return absl::Status(status.code(), absl::StrCat(model_path, ": ", status.message()));
}

}  // namespace

// The model and the manifest are read on two threads (each reader is
// single-threaded and they share nothing; on one when no thread can be
// started); the rules, the reference and the model's record after.
absl::StatusOr<SemanticMapper> SemanticMapper::Open(const std::string& model_path,
                                                    const std::string& manifest_path,
                                                    const OpenOptions& options) try {
  absl::StatusOr<Graph> graph = absl::UnknownError("not loaded");
  absl::StatusOr<Manifest> loaded_manifest = absl::UnknownError("not loaded");
  internal::PhaseTimes phases;
  double manifest_s = 0, graph_s = 0;
  // An exception on either thread is rethrown here once both are done.
  internal::RunBoth(
      !manifest_path.empty(),
      [&] {
        if (!manifest_path.empty()) {
          const internal::PhaseClock clock;
          loaded_manifest = Manifest::Load(manifest_path, options.manifest);
          manifest_s = clock.Seconds();
        }
      },
      [&] {
        const internal::PhaseClock clock;
        graph = Graph::Load(model_path, options.graph);
        graph_s = clock.Seconds();
      });
  phases.Add("load", graph_s);
  if (!manifest_path.empty()) phases.Add("manifest (beside load)", manifest_s);
  internal::PhaseClock clock;
  if (!graph.ok()) return graph.status();
  std::shared_ptr<const Manifest> manifest;
  if (!manifest_path.empty()) {
    if (!loaded_manifest.ok()) return loaded_manifest.status();
    manifest = std::make_shared<const Manifest>(*std::move(loaded_manifest));
  }
  MapperOptions mapper_options = options.mapper;
  std::shared_ptr<const Rules> rules;
  if (!options.rules_path.empty()) {
    SEMMAP_ASSIGN_OR_RETURN(Rules loaded, Rules::Load(options.rules_path));
    rules = std::make_shared<const Rules>(std::move(loaded));
    mapper_options.rules = rules.get();
  }
  std::optional<Graph> reference;
  if (!options.reference_path.empty()) {
    clock.Lap();
    absl::StatusOr<Graph> loaded = Graph::Load(options.reference_path, options.graph);
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrCat("reference ", loaded.status().message()));
    }
    reference.emplace(*std::move(loaded));
    mapper_options.reference = &*reference;
    phases.Add("reference load", clock.Lap());
  }
  Provenance provenance;
  provenance.manifest = manifest ? InputSource::kFile : InputSource::kNone;
  provenance.reference = reference ? InputSource::kFile : InputSource::kNone;
  std::optional<internal::DecodedRecord> record;
  if (internal::CarriesRecord(*graph)) {
    if (!options.use_record || reference) {
      provenance.record = RecordUse::kIgnored;
      provenance.note = reference ? "a reference file was named; it replaces the record"
                                  : "the record was not read, as asked";
    } else {
      clock.Lap();
      SEMMAP_ASSIGN_OR_RETURN(record, internal::ReadRecord(*graph, model_path, options.graph));
      phases.Add("record read", clock.Lap());
    }
  }
  absl::StatusOr<SemanticMapper> mapper =
      record ? MapWithRecord(*graph, manifest, mapper_options, *record, &provenance)
             : Create(*graph, manifest, mapper_options);
  if (!mapper.ok()) {
    const std::string manifest_label =
        !manifest_path.empty() ? manifest_path
        : provenance.manifest == InputSource::kRecord
            ? absl::StrCat("(the record's, metadata_props \"", kRecordKey, "\")")
            : std::string();
    return OpenError(mapper.status(), model_path, manifest_label, options.reference_path);
  }
  mapper->impl_->owned_rules = std::move(rules);
  mapper->impl_->provenance = std::move(provenance);
  mapper->impl_->phases.Prepend(phases);
  return mapper;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(model_path, "mapping");
}

absl::StatusOr<SemanticMapper> SemanticMapper::Create(Graph graph,
                                                      std::shared_ptr<const Manifest> manifest,
                                                      const MapperOptions& options) {
  return Build(std::move(graph), std::move(manifest), options, nullptr);
}

// The pipeline of docs/mapping.md, one step per internal unit: group the
// nodes by scope (steps/group_scopes.h), bind the ONNX root to the manifest
// (steps/bind_root.h), resolve each scope (steps/resolve_scopes.h), carry a
// reference export's answers over (strategies/reference_transfer.h), check
// the fit and read tensor names (steps/assess_fit.h, core/tensor_evidence.h),
// then the graph's structure and neighbourhood (strategies/structure.h,
// strategies/neighbourhood.h), and finish. About 190 lines: a few per step,
// in order, so the pipeline reads here whole, and a reference's share (its
// own mapping, the graph's own answers) beside the steps it feeds; steps
// that share nothing they write run as pairs on two threads
// (internal::RunBoth) on a large graph.
absl::StatusOr<SemanticMapper> SemanticMapper::Build(Graph graph_handle,
                                                     std::shared_ptr<const Manifest> shared,
                                                     const MapperOptions& options,
                                                     const internal::GivenReference* given) try {
  const Rules& rules = options.rules != nullptr ? *options.rules : Rules::Default();
  auto impl = std::make_unique<Impl>(std::move(graph_handle));
  Impl& mapper = *impl;
  mapper.rules = &rules;
  internal::EvidenceStore& store = mapper.evidence;
  const Graph& graph = mapper.graph;
  mapper.has_manifest = shared != nullptr;
  internal::PhaseTimes& phases = mapper.phases;
  internal::PhaseClock clock;
  // The scopes, beside what needs only the graph: the mappings' memory
  // and each op's traits.
  internal::GraphScopes scopes;
  std::optional<internal::OpTraits> op_traits;
  internal::RunBoth(
      graph.size() >= internal::kParallelNodes,
      [&] {
        mapper.records.resize(graph.size());
        op_traits.emplace(graph, rules);
      },
      [&] { scopes = internal::GroupScopes(graph, rules); });
  const internal::OpTraits& ops = *op_traits;
  phases.Add("scopes and op traits", clock.Lap());

  // The unprocessed export, mapped first with the same manifest (or with
  // the module paths derived from its own scopes, then shared); and the
  // graph on its own evidence, which no carried-over answer overrides when
  // no more confident: with a named manifest, from the same name steps as
  // the answer below (OwnAnswers), else mapped on its own (its manifest is
  // derived from its own scopes, not the reference's).
  // A given reference (a record's) comes with its answers, in the ids of
  // the manifest passed here.
  std::optional<SemanticMapper> reference, own;
  const Graph* reference_graph = given != nullptr ? given->graph : options.reference;
  const std::vector<internal::MappingRecord>* reference_answers = nullptr;
  const internal::OriginTable* reference_origins = nullptr;
  if (reference_graph != nullptr) {
    if (given != nullptr && given->check != nullptr) {
      mapper.reference_check = *given->check;
    } else {
      SEMMAP_ASSIGN_OR_RETURN(
          mapper.reference_check,
          internal::CheckReference(graph, *reference_graph, rules,
                                   given != nullptr ? given->naming : nullptr));
      phases.Add("reference check", clock.Lap());
    }
    MapperOptions reference_options = options;
    reference_options.reference = nullptr;
    if (given != nullptr) {
      reference_answers = given->answers;
      reference_origins = given->origins;
    } else {
      SEMMAP_ASSIGN_OR_RETURN(reference, Create(*options.reference, shared, reference_options));
      reference_answers = &reference->impl_->records;
      reference_origins = &reference->impl_->origins;
      phases.Append("reference", reference->impl_->phases);
      clock.Lap();
    }
    if (shared == nullptr) {
      reference_options.allow_manifest_mismatch = true;  // a misfit is refused below
      SEMMAP_ASSIGN_OR_RETURN(own, Create(graph, shared, reference_options));
      phases.Append("own", own->impl_->phases);
      clock.Lap();
    }
  }
  const bool derived = !mapper.has_manifest;
  if (derived) {
    shared = reference ? reference->impl_->manifest
                       : std::make_shared<const Manifest>(
                             Manifest::FromModulePaths(internal::DerivedModulePaths(scopes)));
  }
  mapper.provenance.manifest = derived ? InputSource::kNone : InputSource::kFile;
  mapper.provenance.reference = reference_graph != nullptr ? InputSource::kFile : InputSource::kNone;
  mapper.manifest = std::move(shared);
  const Manifest& manifest = *mapper.manifest;
  if (derived) {
    internal::ResolveScopesUnder(manifest, mapper.binding, scopes.ordered);
  } else {  // resolves the scopes under the binding it chooses
    mapper.binding = internal::ChooseRootBindings(manifest, scopes.ordered,
                                                   options.max_wrapper_segments);
    internal::BindInitializerWrapper(graph, manifest, options.max_wrapper_segments,
                                     &mapper.binding);
  }
  internal::ScopeOutcomes(manifest, derived, &scopes, &mapper.binding, &store);
  internal::ApplyScopeOutcomes(scopes, &mapper.records);
  mapper.kind = internal::ReadGraphKind(ops, mapper.records);
  phases.Add("resolve the scopes", clock.Lap());
  const internal::TensorEvidence tensors(graph, manifest, rules, ops, mapper.binding.root,
                                         mapper.binding.wrapper);
  const internal::MappingContext context{
      graph, manifest, rules, ops, tensors, mapper.records, mapper.evidence, mapper.origins};
  const std::vector<bool> shape = internal::ShapeComputations(graph, ops);
  // The graph's own answers and the pairing with the reference read only
  // the graphs and what is settled: on a large graph they run on two cores.
  std::optional<OwnAnswers> own_answers;
  const bool transfers = reference_answers != nullptr && !mapper.reference_check.same_graph;
  std::vector<internal::NodeMatch> matches;
  phases.Add("tensor evidence", clock.Lap());
  double own_s = 0, pairing_s = 0;
  internal::RunBoth(
      graph.size() >= internal::kParallelNodes,
      [&] {
        if (reference_answers == nullptr || derived) return;
        const internal::PhaseClock own_clock;
        own_answers.emplace(mapper.records);
        OwnAnswers& o = *own_answers;
        const internal::MappingContext own_context{
            graph, manifest, rules, ops, tensors, o.records, o.evidence, o.origins};
        tensors.WidenRewrittenNodes(&o.records, &o.evidence, &o.origins);
        Infer(own_context, shape, /*factor=*/1.0, options);
        internal::RecordFoldedNeighbours(own_context);
        FinishMappings(rules, /*calibrate=*/true, mapper.kind, &o.records);
        own_s = own_clock.Seconds();
      },
      [&] {
        if (!transfers) return;
        const internal::PhaseClock pairing_clock;
        matches = internal::MatchToReference(graph, *reference_graph, rules);
        pairing_s = pairing_clock.Seconds();
      });
  if (own_answers) phases.Add("own answers (beside pairing)", own_s);
  if (transfers) phases.Add("pairing", pairing_s);
  clock.Lap();
  // A record's answers, before they are carried over: against the graph's
  // own (MapWithRecord refuses a record that disagrees).
  if (given != nullptr && transfers && own_answers) {
    mapper.record_answers = internal::CheckRecordAnswers(
        internal::PairedAnswers(matches, *reference_answers, own_answers->records, manifest),
        own_answers->records);
    phases.Add("record answers check", clock.Lap());
  }
  tensors.WidenRewrittenNodes(&mapper.records, &mapper.evidence, &mapper.origins);
  if (transfers) {
    internal::TransferContext transfer;
    transfer.reference_mappings = reference_answers;
    transfer.reference_origins = reference_origins;
    transfer.check = &mapper.reference_check;
    transfer.matches = &matches;
    internal::TransferFromReference(context, *reference_graph, transfer);
    phases.Add("transfer", clock.Lap());
  }
  // The manifest's fit and the modules' categories only read what is
  // settled by now, the remaining steps write the mappings: on a large
  // graph the two run on two cores. A manifest that does not fit is refused
  // once both are done.
  double check_s = 0, infer_s = 0;
  auto check = [&] {
    const internal::PhaseClock check_clock;
    if (!derived) {
      mapper.fit = internal::AssessManifestFit(context, internal::ScopeSamples(scopes),
                                                internal::ResolvedModulesOfNodes(scopes),
                                                mapper.binding);
    }
    mapper.categories = rules.categoriesOf(manifest);
    check_s = check_clock.Seconds();
  };
  auto infer = [&] {
    const internal::PhaseClock infer_clock;
    Infer(context, shape, derived ? internal::confidence::kNoManifestFactor : 1.0, options);
    infer_s = infer_clock.Seconds();
  };
  internal::RunBoth(graph.size() >= internal::kParallelNodes, check, infer);
  phases.Add("fit (beside inference)", check_s);
  phases.Add("inference", infer_s);
  clock.Lap();
  if (!derived && !mapper.fit.fits && !options.allow_manifest_mismatch) {
    return absl::FailedPreconditionError(
        absl::StrCat("the manifest does not fit the graph: ", mapper.fit.evidence));
  }
  internal::RecordFoldedNeighbours(context);
  FinishMappings(rules, !derived, mapper.kind, &mapper.records);
  // After the calibration: the own mapping's answers are reported ones too.
  if (own_answers || own) {
    mapper.reference_check.own_answers_kept = internal::KeepOwnAnswers(
        own_answers ? own_answers->records : own->impl_->records,
        own_answers ? manifest : own->manifest(), manifest, mapper.reference_check.ancestor(),
        &mapper.records, &store);
  }
  phases.Add("finish", clock.Lap());
  return SemanticMapper(std::move(impl));
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory("the model", "mapping");
} catch (const std::length_error&) {
  return internal::OutOfMemory("the model", "mapping");
}

Mapping SemanticMapper::moduleFor(NodeId node) const {
  const internal::MappingRecord& r = impl_->records[static_cast<std::size_t>(node)];
  Mapping m;
  m.module = r.module;
  m.confidence = r.confidence;
  m.strategy = r.strategy;
  m.evidence = r.evidence;
  if (r.mapped()) {
    const ModuleInfo& info = impl_->manifest->module(r.module);
    m.module_path = info.path;
    m.class_name = info.class_name;
    m.qualified_class = info.qualified_class;
    m.category = impl_->categories[static_cast<std::size_t>(r.module)];
  }
  return m;
}

absl::StatusOr<Mapping> SemanticMapper::moduleFor(absl::string_view node) const {
  const NodeId id = impl_->graph.find(node);
  if (id == kNoNode) {
    return absl::NotFoundError(absl::StrCat(
        "no node named \"", internal::Abbreviate(std::string(node)), "\" in the graph"));
  }
  return moduleFor(id);
}

absl::Span<const ModuleId> SemanticMapper::originsOf(NodeId node) const {
  return impl_->origins.Of(node);
}

absl::Span<const std::uint32_t> SemanticMapper::originSharesOf(NodeId node) const {
  return impl_->origins.Shares(node);
}

std::vector<absl::string_view> SemanticMapper::originPathsOf(NodeId node) const {
  std::vector<absl::string_view> paths;
  for (ModuleId m : originsOf(node)) paths.push_back(impl_->manifest->module(m).path);
  return paths;
}

absl::Span<const internal::MappingRecord> internal::MapperAccess::Records(
    const SemanticMapper& mapper) {
  return mapper.impl_->records;
}

const internal::PhaseTimes& internal::MapperAccess::Phases(const SemanticMapper& mapper) {
  return mapper.impl_->phases;
}

Mapping internal::MappingAt(const SemanticMapper* mapper, std::ptrdiff_t index) {
  return mapper->moduleFor(static_cast<NodeId>(index));
}

MappingList SemanticMapper::mapAll() const { return MappingList(this, impl_->records.size()); }

std::array<std::size_t, kStrategyCount> SemanticMapper::strategyCounts() const {
  std::array<std::size_t, kStrategyCount> counts{};
  for (const internal::MappingRecord& m : impl_->records) {
    ++counts[static_cast<std::size_t>(m.strategy)];
  }
  return counts;
}

std::size_t SemanticMapper::mappedCount() const {
  return static_cast<std::size_t>(
      std::count_if(impl_->records.begin(), impl_->records.end(),
                    [](const internal::MappingRecord& m) { return m.confidence > 0; }));
}

const RootBinding& SemanticMapper::rootBinding() const { return impl_->binding; }
const ManifestFit& SemanticMapper::manifestFit() const { return impl_->fit; }
GraphKind SemanticMapper::graphKind() const { return impl_->kind; }
const ReferenceCheck& SemanticMapper::referenceCheck() const { return impl_->reference_check; }
const Provenance& SemanticMapper::provenance() const { return impl_->provenance; }
const Manifest& SemanticMapper::manifest() const { return *impl_->manifest; }
const std::shared_ptr<const Manifest>& SemanticMapper::sharedManifest() const {
  return impl_->manifest;
}
bool SemanticMapper::hasManifest() const { return impl_->has_manifest; }
const Rules& SemanticMapper::rules() const { return *impl_->rules; }
const Graph& SemanticMapper::graph() const { return impl_->graph; }

}  // namespace semmap
