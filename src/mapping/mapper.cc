#include "semmap/mapper.h"

#include <algorithm>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/parallel.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "mapping/confidence.h"
#include "mapping/evidence_store.h"
#include "mapping/graph_scopes.h"
#include "mapping/manifest_fit.h"
#include "mapping/root_binding.h"
#include "mapping/scope_outcome.h"
#include "mapping/strategies/neighbourhood.h"
#include "mapping/strategies/reference_transfer.h"
#include "mapping/strategies/structure.h"
#include "mapping/strategies/tensor_evidence.h"

namespace semmap {
namespace {

// The last step: unmapped nodes get confidence 0 and a reason, mapped ones
// the views of their module's path, classes and category.
void FinishMappings(const Manifest& manifest, const std::vector<std::string>& categories,
                    std::vector<Mapping>* mappings) {
  for (Mapping& m : *mappings) {
    if (!m.mapped()) {
      m.confidence = 0.0;
      m.strategy = Strategy::kUnmapped;
      if (m.evidence.empty()) m.evidence = "no scope and no mapped neighbour";  // a literal
      continue;
    }
    const ModuleInfo& info = manifest.module(m.module);
    m.module_path = info.path;
    m.class_name = info.class_name;
    m.qualified_class = info.qualified_class;
    m.category = categories[m.module];
  }
}

}  // namespace

SemanticMapper::SemanticMapper(Graph graph) : graph_(std::move(graph)) {}
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

absl::StatusOr<SemanticMapper> SemanticMapper::Open(const std::string& model_path,
                                                    const std::string& manifest_path,
                                                    const OpenOptions& options) {
  // The two files are read on two threads (each reader is single-threaded
  // and they share nothing); on one when no thread can be started.
  absl::StatusOr<Manifest> loaded = absl::NotFoundError("no manifest");
  auto read_manifest = [&]() {
    try {  // Manifest::Load reports its own errors; nothing may escape a thread
      loaded = Manifest::Load(manifest_path, options.manifest);
    } catch (const std::bad_alloc&) {
      loaded = internal::OutOfMemory(manifest_path, "loading the manifest");
    } catch (...) {
      loaded = absl::InternalError(
          absl::StrCat(manifest_path, ": unexpected exception while loading the manifest"));
    }
  };
  std::thread reader;
  if (!manifest_path.empty()) {
    try {
      reader = std::thread(read_manifest);
    } catch (const std::system_error&) {
      read_manifest();
    }
  }
  absl::StatusOr<Graph> graph = Graph::Load(model_path, options.graph);
  if (reader.joinable()) reader.join();
  if (!graph.ok()) return graph.status();
  std::shared_ptr<const Manifest> manifest;
  if (!manifest_path.empty()) {
    if (!loaded.ok()) return loaded.status();
    manifest = std::make_shared<const Manifest>(*std::move(loaded));
  }
  absl::StatusOr<SemanticMapper> mapper =
      Create(*std::move(graph), std::move(manifest), options.mapper);
  if (absl::IsFailedPrecondition(mapper.status()) && !manifest_path.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        model_path, ": manifest ", manifest_path, " is of another model: ",
        mapper.status().message()));
  }
  if (!mapper.ok()) {
    return absl::Status(mapper.status().code(),
                        absl::StrCat(model_path, ": ", mapper.status().message()));
  }
  return mapper;
}

// The pipeline of docs/mapping.md, one step per internal unit: group the
// nodes by scope (graph_scopes.h), bind the ONNX root to the manifest
// (root_binding.h), resolve each scope (scope_outcome.h), carry a
// reference export's answers over (reference_transfer.h), check the fit and
// read tensor names (manifest_fit.h, tensor_evidence.h), then the graph's
// structure and neighbourhood (structure.h, neighbourhood.h), and finish.
// About 85 lines: a few per step, in order, so the pipeline reads here
// whole; steps that share nothing they write run as pairs on two threads
// (internal::RunBoth) on a large graph.
absl::StatusOr<SemanticMapper> SemanticMapper::Create(Graph graph_handle,
                                                      std::shared_ptr<const Manifest> shared,
                                                      const MapperOptions& options) try {
  const Rules& rules = options.rules != nullptr ? *options.rules : Rules::Default();
  SemanticMapper mapper(std::move(graph_handle));
  mapper.evidence_ = std::make_unique<internal::EvidenceStore>();
  internal::EvidenceStore& store = *mapper.evidence_;
  const Graph& graph = mapper.graph_;
  mapper.has_manifest_ = shared != nullptr;
  // The scopes, beside what needs only the graph: the mappings' memory
  // and each op's traits.
  internal::GraphScopes scopes;
  std::optional<internal::OpTraits> op_traits;
  internal::RunBoth(
      graph.size() >= internal::kParallelNodes,
      [&] {
        mapper.mappings_.resize(graph.size());
        op_traits.emplace(graph, rules);
      },
      [&] { scopes = internal::GroupScopes(graph, rules); });
  const internal::OpTraits& ops = *op_traits;

  // The unprocessed export, mapped first with the same manifest (or with
  // the module paths derived from its own scopes, then shared).
  std::optional<SemanticMapper> reference;
  if (options.reference != nullptr) {
    SEMMAP_RETURN_IF_ERROR(internal::CheckSameModel(graph, *options.reference, rules));
    MapperOptions reference_options = options;
    reference_options.reference = nullptr;
    SEMMAP_ASSIGN_OR_RETURN(reference, Create(*options.reference, shared, reference_options));
  }
  const bool derived = !mapper.has_manifest_;
  if (derived) {
    shared = reference ? reference->manifest_
                       : std::make_shared<const Manifest>(
                             Manifest::FromModulePaths(internal::DerivedModulePaths(scopes)));
  }
  mapper.manifest_ = std::move(shared);
  const Manifest& manifest = *mapper.manifest_;
  if (derived) {
    internal::ResolveScopesUnder(manifest, mapper.binding_, scopes.ordered);
  } else {  // resolves the scopes under the binding it chooses
    mapper.binding_ = internal::ChooseRootBinding(manifest, scopes.ordered,
                                                  options.max_wrapper_segments);
  }
  internal::ScopeOutcomes(manifest, derived, &scopes, &mapper.binding_, &store);
  internal::ApplyScopeOutcomes(scopes, &mapper.mappings_);
  if (reference) {
    internal::TransferFromReference(graph, *options.reference, reference->mapAll(), manifest,
                                    rules, &mapper.mappings_, &store);
  }

  const internal::TensorEvidence tensors(graph, manifest, rules, ops, mapper.binding_.root,
                                         mapper.binding_.wrapper);
  // The manifest's fit and the modules' categories only read what is
  // settled by now, the remaining steps write the mappings: on a large
  // graph the two run on two cores. A manifest that does not fit is refused
  // once both are done.
  auto check = [&] {
    if (!derived) {
      mapper.fit_ = internal::AssessManifestFit(graph, internal::ScopeSamples(scopes),
                                                internal::ResolvedModulesOfNodes(scopes),
                                                manifest, rules, ops, mapper.binding_, tensors);
    }
    mapper.categories_ = rules.categoriesOf(manifest);
  };
  auto infer = [&] {
    tensors.MapNodes(derived ? internal::confidence::kNoManifestFactor : 1.0,
                     &mapper.mappings_, &store);
    // Nodes still without evidence: the graph's structure and execution
    // order, then their neighbours.
    const std::vector<bool> shape = internal::ShapeComputations(graph, ops);
    internal::StructureCounts structure = internal::InferFromStructure(
        graph, manifest, rules, ops, tensors, shape, &mapper.mappings_, &store);
    internal::InferFromNeighbourhood(graph, manifest, ops, shape, structure.hints,
                                     options.max_neighbourhood_passes, &mapper.mappings_,
                                     &store);
  };
  internal::RunBoth(graph.size() >= internal::kParallelNodes, check, infer);
  if (!derived && !mapper.fit_.fits && !options.allow_manifest_mismatch) {
    return absl::FailedPreconditionError(
        absl::StrCat("the manifest does not fit the graph: ", mapper.fit_.evidence));
  }
  FinishMappings(manifest, mapper.categories_, &mapper.mappings_);
  return mapper;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory("the model", "mapping");
} catch (const std::length_error&) {
  return internal::OutOfMemory("the model", "mapping");
}

absl::StatusOr<Mapping> SemanticMapper::moduleFor(absl::string_view node) const {
  const NodeId id = graph_.find(node);
  if (id == kNoNode) {
    return absl::NotFoundError(absl::StrCat(
        "no node named \"", internal::Abbreviate(std::string(node)), "\" in the graph"));
  }
  return mappings_[id];
}

std::array<std::size_t, kStrategyCount> SemanticMapper::strategyCounts() const {
  std::array<std::size_t, kStrategyCount> counts{};
  for (const Mapping& m : mappings_) ++counts[static_cast<std::size_t>(m.strategy)];
  return counts;
}

std::size_t SemanticMapper::mappedCount() const {
  return static_cast<std::size_t>(std::count_if(
      mappings_.begin(), mappings_.end(), [](const Mapping& m) { return m.confidence > 0; }));
}

}  // namespace semmap
