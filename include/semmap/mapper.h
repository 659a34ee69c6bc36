// SemanticMapper: which module produced each ONNX node.
//
//   absl::StatusOr<semmap::SemanticMapper> mapper =
//       semmap::SemanticMapper::Open("model.onnx", "manifest.json");
//   if (!mapper.ok()) { std::cerr << mapper.status() << "\n"; return 2; }
//   absl::StatusOr<semmap::Mapping> m =
//       mapper->moduleFor("/bert/encoder/layer.0/attention/self/query/MatMul");
//   // m->module_path == "bert.encoder.layer.0.attention.self.query",
//   // m->class_name == "Linear", m->strategy == Strategy::kExactScope
//
// Every node is mapped once, in Create(); moduleFor() is a lookup. An
// unresolved node is not an error: its Mapping has confidence 0.
//
// How it works (details in docs/mapping.md):
//  1. Root binding. The ONNX root scope may be the manifest's root, a
//     submodule of it (an encoder exported alone), or a wrapper around it
//     (a task model's "/bert/..." names against a base-model manifest). All
//     candidate bindings are scored on the distinct scopes of the graph and
//     the best one is used for every node.
//  2. Scope resolution. Each segment is matched to a module by the variable
//     name torch gives its scope: directly under the current module, or
//     deeper (a ModuleList child "layer.0", a called container's "layer1.0"),
//     retrying without a "_N" call suffix ("relu_1" -> "relu").
//  3. Exporter metadata. Dynamo exports carry each node's module stack in
//     metadata_props; it is resolved like a scope.
//     With MapperOptions::reference, the unprocessed export the graph came
//     from is mapped too and its answers carried over to the nodes still
//     without one, by pairing the two graphs (names, then the structure).
//  4. Tensor names. Nodes without either read weights named after their
//     module's parameters, produce such names (torch's de-duplication
//     Identity nodes), or keep scoped output names after an optimizer fused
//     them: the lowest common ancestor of those modules.
//  5. Structure. Nodes without names or metadata between weight-anchored
//     nodes take a module from the execution order, the manifest's module
//     order and the repeated layers; weights without names are aligned
//     with the manifest's parameters by shape and order.
//  6. Op rules and neighbourhood. Quantize/cast/constant nodes follow their
//     consumers (rule data); the rest take the lowest common ancestor of
//     their producers' and consumers' modules, iterated to a fixed point.
//
// Without a manifest the mapper derives module paths from the scopes alone
// (class names unknown) and lowers its confidence accordingly.
//
// Lifetime: a mapper owns what it maps with. It shares the Graph (a handle,
// graph.h) and holds the manifest, so nothing it hands out dangles while it
// lives: Mappings point into its manifest and evidence, Nodes into its
// graph. Copy what must outlive it. Thread-safety: const methods are safe
// to call concurrently.
//
// Memory: the mapper keeps a 32-byte record per node (module id,
// confidence, strategy, evidence); moduleFor() and mapAll() assemble the
// Mapping from it and the manifest on access.
#ifndef SEMMAP_INCLUDE_SEMMAP_MAPPER_H_
#define SEMMAP_INCLUDE_SEMMAP_MAPPER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/export.h"
#include "semmap/graph.h"
#include "semmap/indexed_list.h"
#include "semmap/manifest.h"
#include "semmap/manifest_fit.h"
#include "semmap/mapping.h"
#include "semmap/provenance.h"
#include "semmap/reference_check.h"
#include "semmap/root_binding.h"
#include "semmap/rules.h"

namespace semmap {

struct SEMMAP_EXPORT MapperOptions {
  // Inference rules; null means Rules::Default(). Only read during Create().
  const Rules* rules = nullptr;
  // Upper bound on neighbourhood passes; each pass is linear in the graph.
  int max_neighbourhood_passes = 64;
  // Longest ONNX-only scope prefix tried as a wrapper around the manifest.
  int max_wrapper_segments = 2;
  // The unprocessed export this graph was made from (before onnxslim, ONNX
  // Runtime's optimizers, quantize_dynamic or a tool that strips names), or
  // null. Create() first checks that it is that export (InvalidArgument
  // otherwise, stating how many initializers the two share), maps it with
  // the same manifest (without a manifest: with the module paths derived
  // from the reference's own scopes and metadata, used for both graphs),
  // then pairs the nodes of the two graphs and carries the reference's
  // answers over (Strategy::kReference, docs/mapping.md "Reference
  // transfer"). Nodes mapped by their own exact scope or exporter metadata
  // keep those answers; nodes it cannot pair fall through to the inference
  // below; and no carried-over answer replaces what the graph answers on
  // its own when it is no more confident. A reference that is the graph
  // itself is not used; one that cannot be the graph's source is stated in
  // referenceCheck(). Only read during Create(): it need not outlive the
  // mapper.
  const Graph* reference = nullptr;
  // Map even when the manifest does not fit the graph (ManifestFit below).
  // Off by default: a manifest of another model gives answers that look
  // complete and are wrong, so Create() refuses it.
  bool allow_manifest_mismatch = false;
};

class SemanticMapper;
namespace internal {
struct GivenReference;
struct DecodedRecord;
struct MapperAccess;
// The Mapping of node `index` (SemanticMapper::moduleFor()).
SEMMAP_EXPORT Mapping MappingAt(const SemanticMapper* mapper, std::ptrdiff_t index);
}  // namespace internal

// Every node's Mapping, indexed like Graph::nodes(), each assembled from the
// mapper's compact records when asked (indexed_list.h): valid while the
// mapper lives.
//
//   for (const semmap::Mapping& m : mapper.mapAll()) { ... }
using MappingList = IndexedList<SemanticMapper, Mapping, &internal::MappingAt>;

class SEMMAP_EXPORT SemanticMapper {
 public:
  // Maps every node of `graph`. `manifest` may be null (see above).
  // Errors (messages name no file: the Graph has no path):
  //   InvalidArgument     options.reference is set and is not the export
  //                       `graph` came from (the message gives the shared
  //                       initializers)
  //   FailedPrecondition  the manifest does not fit the graph and
  //                       options.allow_manifest_mismatch is false (the
  //                       message is ManifestFit::evidence)
  // Otherwise none for well-formed inputs.
  static absl::StatusOr<SemanticMapper> Create(Graph graph,
                                               std::shared_ptr<const Manifest> manifest,
                                               const MapperOptions& options = {});
  // Same; the mapper keeps a copy of `*manifest` (null: none), so neither
  // argument need outlive it.
  static absl::StatusOr<SemanticMapper> Create(const Graph& graph, const Manifest* manifest,
                                               const MapperOptions& options = {});

  // Loads the model, the manifest, and the reference export and rule file
  // when named, and maps: the one call most users need, and the one load
  // path of the `semmap` tool and the Python package. "" means none.
  //
  // A model that carries a provenance record (semmap embed, provenance.h)
  // is mapped with it when neither a manifest nor a reference is named:
  // the record's manifest and its graph's answers serve as both. A named
  // reference replaces the record; a named manifest replaces its manifest,
  // and its answers are used only when that manifest lists the same
  // modules. A record made from another graph, or whose manifest does not
  // fit, is rejected (provenance() says why) and the model is mapped as
  // without it.
  // Errors name the file at fault:
  //   those of Graph::Load (the model), Manifest::Load, Rules::Load;
  //   a record that cannot be read (InvalidArgument, DataLoss) or is of a
  //   newer format (FailedPrecondition), naming the key and the cause;
  //   the reference's Graph::Load errors, prefixed "reference ";
  //   InvalidArgument "MODEL: reference REF: ..." when the reference is not
  //   the export the model came from;
  //   FailedPrecondition "MODEL: manifest MANIFEST is of another model: ..."
  //   for a misfit (unless mapper.allow_manifest_mismatch).
  // mapper.rules and mapper.reference are ignored when rules_path or
  // reference_path is set.
  struct OpenOptions {
    GraphOptions graph;
    ManifestOptions manifest;
    MapperOptions mapper;
    // The unprocessed export the model was made from (MapperOptions::reference).
    std::string reference_path;
    // A rule file (rules.h) instead of the default rules; the mapper keeps
    // it (rules()).
    std::string rules_path;
    // Use the model's provenance record (above); false maps the model as
    // if it carried none (provenance().record is then kIgnored).
    bool use_record = true;
  };
  static absl::StatusOr<SemanticMapper> Open(const std::string& model_path,
                                             const std::string& manifest_path,
                                             const OpenOptions& options);
  static absl::StatusOr<SemanticMapper> Open(const std::string& model_path,
                                             const std::string& manifest_path) {
    return Open(model_path, manifest_path, OpenOptions());
  }

  SemanticMapper(SemanticMapper&&) noexcept;
  SemanticMapper& operator=(SemanticMapper&&) noexcept;
  ~SemanticMapper();

  // The mapping of a node by index. `node` must be < graph().size(). The
  // Mapping is assembled from the mapper's record of the node; its views
  // stay valid while the mapper lives.
  Mapping moduleFor(NodeId node) const;
  // The mapping of a node by id or unique name; NotFound when the graph has
  // no such node (the message quotes the name).
  absl::StatusOr<Mapping> moduleFor(absl::string_view node) const;

  // One Mapping per node, indexed like Graph::nodes().
  MappingList mapAll() const;
  // The modules whose operations `node` performs when it does the work of
  // several (its origins), in manifest order: a Conv with its BatchNorm
  // folded in by the exporter is {conv, bn}; an ONNX Runtime fusion the
  // modules of the nodes it replaced. Empty for a node of one module, and
  // where no evidence shows the parts (the exporter's rewrite metadata, the
  // reference export, a parameterised module left without a node beside
  // it). moduleFor(node) stays the one primary answer: the part the node
  // still is (the Conv) when one part dominates, else the parts' lowest
  // common ancestor. A view valid while the mapper lives.
  absl::Span<const ModuleId> originsOf(NodeId node) const;
  // Parallel to originsOf(node): how many of the export's nodes each
  // origin's part of a node replaced, when the node's origins come from a
  // reference or a provenance record (a fusion by ONNX Runtime or
  // onnxslim); empty otherwise. An estimate of each part's share of the
  // node's work (semmap profile --split-fused).
  absl::Span<const std::uint32_t> originSharesOf(NodeId node) const;
  // The module paths of originsOf(node): views into manifest().
  std::vector<absl::string_view> originPathsOf(NodeId node) const;
  // Nodes per strategy, indexed by the Strategy's value.
  std::array<std::size_t, kStrategyCount> strategyCounts() const;
  // Nodes with confidence > 0.
  std::size_t mappedCount() const;

  // Where the manifest and the reference came from, and what became of
  // the model's provenance record (provenance.h). Create() sets the
  // sources to kFile for what it is given.
  const Provenance& provenance() const;

  const RootBinding& rootBinding() const;
  // How well the manifest fits the graph; `checked` is false without a
  // manifest.
  const ManifestFit& manifestFit() const;
  // What the graph's names and ops leave to inference (GraphKind,
  // strategy.h): the rule file's calibration may differ per kind.
  GraphKind graphKind() const;
  // What the reference (MapperOptions::reference) is to the graph;
  // `checked` is false without one.
  const ReferenceCheck& referenceCheck() const;
  // The manifest used: the caller's, or the scope-derived one when none was
  // given (class names empty).
  const Manifest& manifest() const;
  // The same manifest, shared: keeps it alive past the mapper.
  const std::shared_ptr<const Manifest>& sharedManifest() const;
  bool hasManifest() const;
  const Graph& graph() const;
  // The rules the mapper mapped with: those Open() loaded from
  // OpenOptions::rules_path, Rules::Default(), or the caller's
  // MapperOptions::rules given to Create(), which must then outlive the
  // calls to rules().
  const Rules& rules() const;

 private:
  friend struct internal::MapperAccess;
  struct Impl;
  explicit SemanticMapper(std::unique_ptr<Impl> impl);
  // Create()'s work; `given` replaces options.reference with a graph and
  // answers already known (a provenance record).
  static absl::StatusOr<SemanticMapper> Build(Graph graph,
                                              std::shared_ptr<const Manifest> manifest,
                                              const MapperOptions& options,
                                              const internal::GivenReference* given);
  // Open()'s mapping of a model carrying a readable record (provenance.h):
  // fills `provenance` with what became of it.
  static absl::StatusOr<SemanticMapper> MapWithRecord(const Graph& graph,
                                                      std::shared_ptr<const Manifest> manifest,
                                                      const MapperOptions& options,
                                                      const internal::DecodedRecord& record,
                                                      Provenance* provenance);
  // MapWithRecord's mapping of the record's own graph stripped of its names.
  static absl::StatusOr<SemanticMapper> SameGraphWithoutNames(
      const Graph& graph, std::shared_ptr<const Manifest> manifest, const MapperOptions& options,
      const internal::DecodedRecord& record, const ReferenceCheck& check, Provenance* provenance);

  std::unique_ptr<Impl> impl_;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_MAPPER_H_
