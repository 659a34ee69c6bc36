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
//  5. Op rules and neighbourhood. Quantize/cast/constant nodes follow their
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
#ifndef SEMMAP_INCLUDE_SEMMAP_MAPPER_H_
#define SEMMAP_INCLUDE_SEMMAP_MAPPER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {
class EvidenceStore;
}  // namespace internal

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
  // below. Only read during Create(): it need not outlive the mapper.
  const Graph* reference = nullptr;
  // Map even when the manifest does not fit the graph (ManifestFit below).
  // Off by default: a manifest of another model gives answers that look
  // complete and are wrong, so Create() refuses it.
  bool allow_manifest_mismatch = false;
};

// How the ONNX root scope was matched to the manifest.
struct SEMMAP_EXPORT RootBinding {
  ModuleId root = 0;                 // manifest module the ONNX root maps to
  std::vector<std::string> wrapper;  // leading ONNX segments outside the manifest
  std::size_t scoped_nodes = 0;      // nodes with a scoped name
  std::size_t resolved_nodes = 0;    // of those, fully resolved under this binding
  std::size_t indirect_steps = 0;    // resolution steps that skipped modules
};

// Why a name the manifest does not have at its literal place still agrees
// with it (ManifestFit::notes). Each is a plain fact of PyTorch export, not
// of one architecture.
enum class FitNoteKind : std::uint8_t {
  // "/layer1/layer1.0/relu_1": TorchScript suffixes every later call of a
  // module called more than once in forward ("relu" called twice; one
  // layer shared across depth).
  kReusedCall = 0,
  // Items of a container with parameters and no node left after the last
  // one used: the exporter folded them into a neighbour (a BatchNorm into
  // the Conv before it).
  kFoldedByExporter = 1,
  // A parameter stored in another shape of the same size ([C] for the
  // module's [C, 1, 1]; a transposed weight).
  kStoredReshaped = 2,
  // A tensor named under a module that is none of its parameters or
  // buffers: a constant its forward created ("embed_tokens.embed_scale").
  kCreatedInForward = 3,
  // A scope reached past a module whose forward did not run (a wrapper's
  // forward calling "model.decoder" directly gives "/decoder"), or names
  // outside the module bound to the graph's root (a task head around a
  // base model's manifest).
  kOutsideManifestRoot = 4,
};
inline constexpr std::size_t kFitNoteKindCount = 5;
// "reused_call", "folded_by_exporter", "stored_reshaped",
// "created_in_forward", "outside_manifest_root".
SEMMAP_EXPORT absl::string_view FitNoteKindName(FitNoteKind kind);

struct SEMMAP_EXPORT FitNote {
  FitNoteKind kind = FitNoteKind::kReusedCall;
  std::size_t count = 0;  // scopes, container items or initializers
  std::size_t nodes = 0;  // nodes with those scopes (0 for tensors, items)
  std::string example;    // the first in text order, abbreviated
  // One line: "8 scopes are later calls of a module called more than once
  // (e.g. \"/layer1/layer1.0/relu_1\")".
  std::string text;
};

// Whether the manifest describes the model the graph was exported from,
// judged from the names the graph still has: node scopes and exporter
// module stacks (resolved under the root binding), and initializers named
// like parameters ("encoder.layer.0.output.dense.weight"). Three outcomes:
//  - fits: every name agrees;
//  - fits, with notes: some names differ from the manifest for a reason of
//    export (FitNoteKind), listed in `notes`; the mapping is done;
//  - misfit (`fits` false): the evidence says another model: most names
//    absent, classes that contradict across many scopes, parameters of
//    other sizes, or another depth of a repeated container. `evidence`
//    names the strongest evidence.
// A task model against its base model's manifest fits (the head's names are
// noted as outside the root). A graph without such names (stripped, or
// fully renamed by an optimizer) gives no evidence either way: it fits,
// with `checked` false. docs/mapping.md, "Manifest fit", gives the rules
// and how they were measured.
struct SEMMAP_EXPORT ManifestFit {
  std::size_t scoped_nodes = 0;      // nodes whose name or metadata gives a
                                     // scope below the root
  std::size_t resolved_nodes = 0;    // of those, naming a manifest module
                                     // (literally, or for a reason noted)
                                     // and its class, when the exporter
                                     // wrote classes
  std::size_t distinct_scopes = 0;   // the scopes of those nodes
  std::size_t resolved_scopes = 0;
  std::size_t class_conflicts = 0;   // scopes whose exporter class differs
  std::string first_class_conflict;
  std::size_t named_tensors = 0;     // initializers named like parameters
  std::size_t matched_tensors = 0;   // of those, agreeing with the manifest
  std::size_t shape_mismatches = 0;  // of those, contradicting it: another
                                     // element count, or a name a library
                                     // module does not have
  std::size_t unused_items = 0;      // trailing items of repeated containers
                                     // (of a class the graph uses there)
                                     // no evidence touches
  std::size_t unnamed_weights = 0;   // initializers of 2 or more dimensions
                                     // without a parameter's name, read by a
                                     // node whose scope names a library
                                     // module with parameters ("onnx::Conv_12"
                                     // after a BatchNorm was folded in)
  std::size_t weight_size_mismatches = 0;  // of those, of no size that
                                           // module's parameters have
  bool checked = false;  // enough names to judge (see docs/mapping.md)
  bool fits = true;
  // Why names differ from the manifest although it fits, one entry per
  // kind present, in FitNoteKind order. Empty for a misfit's own reasons.
  std::vector<FitNote> notes;
  // One line: the counts above, and for a misfit the strongest evidence.
  std::string evidence;

  // "fits", "fits, with notes", "misfit" or "not checked".
  absl::string_view verdict() const;
};

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

  // Loads the model and the manifest ("" for none) and maps: the one call
  // most users need. Errors name the file at fault: those of Graph::Load,
  // Manifest::Load and Create() (a misfit names both files).
  struct OpenOptions {
    GraphOptions graph;
    ManifestOptions manifest;
    MapperOptions mapper;
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

  // The mapping of a node by index. `node` must be < graph.size().
  const Mapping& moduleFor(NodeId node) const { return mappings_[node]; }
  // The mapping of a node by id or unique name; NotFound when the graph has
  // no such node (the message quotes the name).
  absl::StatusOr<Mapping> moduleFor(absl::string_view node) const;

  // One Mapping per node, indexed like Graph::nodes().
  const std::vector<Mapping>& mapAll() const { return mappings_; }
  // Nodes per strategy, indexed by the Strategy's value.
  std::array<std::size_t, kStrategyCount> strategyCounts() const;
  // Nodes with confidence > 0.
  std::size_t mappedCount() const;

  const RootBinding& rootBinding() const { return binding_; }
  // How well the manifest fits the graph; `checked` is false without a
  // manifest.
  const ManifestFit& manifestFit() const { return fit_; }
  // The manifest used: the caller's, or the scope-derived one when none was
  // given (class names empty).
  const Manifest& manifest() const { return *manifest_; }
  // The same manifest, shared: keeps it alive past the mapper.
  const std::shared_ptr<const Manifest>& sharedManifest() const { return manifest_; }
  bool hasManifest() const { return has_manifest_; }
  const Graph& graph() const { return graph_; }

 private:
  explicit SemanticMapper(Graph graph);

  Graph graph_;
  std::shared_ptr<const Manifest> manifest_;
  bool has_manifest_ = false;
  RootBinding binding_;
  ManifestFit fit_;
  std::vector<Mapping> mappings_;
  std::unique_ptr<internal::EvidenceStore> evidence_;  // what mappings_ point into
  std::vector<std::string> categories_;  // per manifest module
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_MAPPER_H_
