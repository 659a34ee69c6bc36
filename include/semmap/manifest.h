// Manifest: the module hierarchy of the PyTorch model an ONNX file came from.
//
// A manifest is the JSON document written by semmap's Python exporter
// (`python -m semmap.manifest manifest ...`), schema in
// schema/manifest.schema.json and docs/manifest.md. It lists every module of
// `model.named_modules()` with its class, parent, children and own
// parameters and buffers.
//
//   absl::StatusOr<semmap::Manifest> m = semmap::Manifest::Load("manifest.json");
//   if (!m.ok()) { std::cerr << m.status() << "\n"; return 2; }
//   semmap::ModuleId id = m->find("encoder.layer.0.attention.self.query");
//   if (id != semmap::kNoModule) std::cout << m->module(id).class_name;
//
// A Manifest is immutable after loading and safe to share between threads.
// Copying or moving one is O(1): copies share the storage. Modules are
// stored compactly (class, tensor and op names interned, lists in flat
// arrays) and handed out as ModuleInfo views assembled on access.
#ifndef SEMMAP_INCLUDE_SEMMAP_MANIFEST_H_
#define SEMMAP_INCLUDE_SEMMAP_MANIFEST_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/export.h"
#include "semmap/indexed_list.h"

namespace semmap {

// Index of a module in Manifest::modules(); the root is 0.
using ModuleId = std::int32_t;
inline constexpr ModuleId kNoModule = -1;

// The newest schema version this build reads (it reads 1 and 2).
inline constexpr int kManifestSchemaVersion = 2;

// The structs below are views, assembled on access from the Manifest's
// compact storage (interned class, tensor, dtype and op names; modules,
// children, tensors and events in flat arrays). Their strings and spans live
// as long as the Manifest they came from, or any copy of it (copies share
// the storage).

struct SEMMAP_EXPORT TensorSpec {
  absl::string_view name;  // local name inside its module ("weight")
  absl::Span<const std::int64_t> shape;
  absl::string_view dtype;  // "float32", "int64", ...
};

// One step of a module's forward pass as the manifest writer recorded it
// (schema version 2; docs/manifest.md, "Forward signatures"): a call of
// another module, or an operation the module's own code ran.
struct SEMMAP_EXPORT ForwardEvent {
  // The module called (usually a child); kNoModule for an operation.
  ModuleId call = kNoModule;
  // The operation, by its normalised torch name ("add", "linear",
  // "layer_norm"); empty for a call.
  absl::string_view op;
  // The module's own parameters and buffers the operation read ("weight").
  absl::Span<const absl::string_view> reads;
};

struct SEMMAP_EXPORT ModuleInfo {
  absl::string_view path;             // "encoder.layer.0"; "" for the root
  absl::string_view class_name;       // "BertLayer"
  absl::string_view qualified_class;  // "transformers.models.bert.modeling_bert.BertLayer"
  ModuleId parent = kNoModule;        // kNoModule only for the root
  absl::Span<const ModuleId> children;  // registration order
  absl::Span<const TensorSpec> parameters;
  absl::Span<const TensorSpec> buffers;
  int depth = 0;  // root = 0
  // True when the module has children and every child's last path atom is
  // a number (decimal digits only): a ModuleList or Sequential of repeated
  // items. SemanticQuery's repeated containers are these, with children of
  // one class.
  bool numbered_children = false;
  // The name torch's TorchScript exporter gives this module's scope: the
  // path's trailing atoms back to the first non-numeric one
  // ("encoder.layer.0" -> "layer.0", "layer1.0" -> "layer1.0"); a suffix of
  // `path`.
  absl::string_view variable_name;
  // The module's first forward call, when the manifest records it (schema
  // version 2): its calls and own operations in order. `traced` tells a
  // forward that did nothing from one not recorded.
  absl::Span<const ForwardEvent> forward;
  bool traced = false;
};

struct SEMMAP_EXPORT ManifestOptions {
  // Files above this size are refused (InvalidArgument).
  std::uint64_t max_file_bytes = std::uint64_t{1} << 30;
  // More modules than this are refused (InvalidArgument).
  std::size_t max_modules = 10'000'000;
};

namespace internal {
struct ManifestRep;
class ManifestReader;
// Module `index` of `rep`, assembled from its record (Manifest::module()).
SEMMAP_EXPORT ModuleInfo ModuleAt(const ManifestRep* rep, std::ptrdiff_t index);
}  // namespace internal

// Manifest::modules(): `for (const ModuleInfo& m : manifest.modules())`,
// `modules()[id]`, `size()` (indexed_list.h).
using ModuleList = IndexedList<internal::ManifestRep, ModuleInfo, &internal::ModuleAt>;

class SEMMAP_EXPORT Manifest {
 public:
  // Copies share the immutable storage: O(1).
  Manifest(const Manifest& other) = default;
  Manifest& operator=(const Manifest& other) = default;
  Manifest(Manifest&&) noexcept = default;
  Manifest& operator=(Manifest&&) noexcept = default;
  ~Manifest() = default;

  // Reads and validates a manifest file. Errors (messages start with the
  // file name): NotFound (missing file), InvalidArgument (not valid JSON,
  // with the byte and the cause: syntax, UTF-8, nesting deeper than 256, an
  // integer outside 64 bits; not a manifest; a field of the wrong type or
  // missing, or one the schema does not define for a module, a tensor or a
  // forward event, with its JSON pointer; duplicate paths; a
  // parent/children inconsistency; a forward signature the schema forbids
  // (in version 1, more than 10,000 events, reads on a call or of a tensor
  // the module does not hold) or version 2 without one; a call of the
  // caller, of the root or closing a cycle of calls; above a limit of
  // `options`), FailedPrecondition (a schema version this build does not
  // read). docs/manifest.md, "What the reader checks". The whole file is validated
  // as JSON before any field is read; a key given twice keeps its last value.
  static absl::StatusOr<Manifest> Load(const std::string& path,
                                       const ManifestOptions& options = {});
  // Same, from JSON text (max_file_bytes applies to its size); `origin`
  // names the source in messages.
  static absl::StatusOr<Manifest> Parse(absl::string_view json,
                                        absl::string_view origin,
                                        const ManifestOptions& options = {});

  // A manifest holding the given module paths and all their ancestors (the
  // root included), for mapping when no manifest file exists. Each entry is
  // a dotted path and its qualified class ("" when unknown; class_name is
  // then empty too). Empty atoms are dropped.
  static Manifest FromModulePaths(
      const std::vector<std::pair<std::string, std::string>>& paths_and_classes);

  int schemaVersion() const;
  const std::string& modelClass() const;
  const std::string& modelQualifiedClass() const;
  const std::string& modelType() const;
  // Scalar config fields, rendered as JSON text, in file order.
  const std::vector<std::pair<std::string, std::string>>& config() const;

  std::size_t size() const;
  ModuleList modules() const { return ModuleList(rep_.get(), size()); }
  // The module, assembled on access (a view: see ModuleInfo).
  ModuleInfo module(ModuleId id) const { return internal::ModuleAt(rep_.get(), id); }
  ModuleId root() const { return 0; }
  // One field of a module, without assembling the others.
  absl::string_view path(ModuleId id) const;
  ModuleId parent(ModuleId id) const;
  int depth(ModuleId id) const;
  absl::Span<const ModuleId> children(ModuleId id) const;
  absl::Span<const TensorSpec> parameters(ModuleId id) const;
  absl::Span<const ForwardEvent> forward(ModuleId id) const;
  bool traced(ModuleId id) const;

  // Module with exactly this dotted path, or kNoModule. O(1).
  ModuleId find(absl::string_view path) const;
  // find() of `parent`'s path, a dot and `name` ("encoder.layer" and "0":
  // "encoder.layer.0"; the root's path is "" and takes no dot). A child
  // (`name` without a dot) of a module with few children is found among
  // them, without hashing the whole path.
  ModuleId findChild(ModuleId parent, absl::string_view name) const;
  // Modules whose variable_name is `name` (see ModuleInfo), in manifest order.
  absl::Span<const ModuleId> withVariableName(absl::string_view name) const;
  // The module owning the parameter or buffer with this full dotted name
  // ("encoder.layer.0.output.dense.weight"), or kNoModule. When a local
  // name holds a dot and so two modules could give the name, the one listed
  // first.
  ModuleId ownerOfTensor(absl::string_view full_name) const;
  // Module `id`'s own parameter or buffer of this local name ("weight"),
  // the first listed (its parameters, then its buffers), or null. O(1),
  // however many tensors the module holds.
  const TensorSpec* findTensor(ModuleId id, absl::string_view local) const;

  // True when `ancestor` is `id` or one of its ancestors.
  bool isAncestorOrSelf(ModuleId ancestor, ModuleId id) const;
  // Lowest common ancestor; kNoModule when either is kNoModule.
  ModuleId lowestCommonAncestor(ModuleId a, ModuleId b) const;

 private:
  friend class internal::ManifestReader;  // Load's and Parse's work
  explicit Manifest(std::shared_ptr<const internal::ManifestRep> rep) : rep_(std::move(rep)) {}

  // Never null; immutable once built.
  std::shared_ptr<const internal::ManifestRep> rep_;
};

// The TorchScript scope variable name of a module path (see ModuleInfo).
SEMMAP_EXPORT std::string VariableNameOf(absl::string_view path);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_MANIFEST_H_
