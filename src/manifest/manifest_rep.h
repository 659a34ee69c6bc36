// ManifestRep: what a Manifest holds (include/semmap/manifest.h keeps only a
// pointer to it). Built once by ManifestBuilder, then immutable and shared
// by every copy of the Manifest; lookups may run on any number of threads.
//
// A module is a ModuleRecord: its path an offset and length into `chars`
// (every path back to back), its class an index into `classes`, its
// children, tensors and forward events ranges of the flat arrays
// `children`, `tensors` and `events`. Class names, qualified classes,
// tensor names, dtypes and op names repeat across modules and are kept once
// (`interned`). TensorSpec and ForwardEvent are stored as the public views
// themselves, so ModuleInfo hands out spans of them; ModuleAt assembles a
// ModuleInfo on access. 1.x kept a ModuleInfo per module (four strings and
// four vectors, 88 MB at 183,112 modules); a manifest loaded alone
// peaked at 180 MB instead of 241 MB, and at 71.5 MB since the reader
// holds no document of the whole file (manifest_reader.h).
#ifndef SEMMAP_SRC_MANIFEST_MANIFEST_REP_H_
#define SEMMAP_SRC_MANIFEST_MANIFEST_REP_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {

struct ModuleRecord {
  std::size_t path = 0;  // offset into ManifestRep::chars
  std::uint32_t path_size = 0;
  std::uint32_t variable_name = 0;  // where ModuleInfo::variable_name begins in the path
  std::uint32_t class_index = 0;    // into ManifestRep::classes
  ModuleId parent = kNoModule;
  std::int32_t depth = 0;
  std::uint32_t first_child = 0, child_count = 0;
  // tensors[first_tensor ..): the parameters, then the buffers.
  std::uint32_t first_tensor = 0, parameter_count = 0, buffer_count = 0;
  std::uint32_t first_event = 0, event_count = 0;
  bool numbered_children = false;
  bool traced = false;
};

struct ManifestRep {
  int schema_version = 0;
  std::string model_class;
  std::string model_qualified_class;
  std::string model_type;
  std::vector<std::pair<std::string, std::string>> config;

  std::vector<ModuleRecord> modules;
  std::string chars;  // every module's path, back to back
  // Distinct strings, each stored once; a deque's elements never move, so
  // views of them stay valid as it grows.
  std::deque<std::string> interned;
  // (class_name, qualified_class) of each distinct class; [0] is ("", "").
  std::vector<std::pair<absl::string_view, absl::string_view>> classes;
  std::vector<ModuleId> children;  // each module's children, module by module
  std::vector<TensorSpec> tensors;
  std::vector<std::int64_t> dims;  // the tensors' shapes
  std::vector<ForwardEvent> events;
  std::vector<absl::string_view> reads;  // the events' reads

  // Lookups. Keys view `chars`.
  absl::flat_hash_map<absl::string_view, ModuleId> by_path;
  // Modules but the root grouped by variable name, in manifest order within
  // a group; by_variable_name gives each name's range of it.
  std::vector<ModuleId> variable_name_order;
  absl::flat_hash_map<absl::string_view, std::pair<std::uint32_t, std::uint32_t>>
      by_variable_name;
  // A module's tensors are searched by name when it has at most
  // kSearchedTensors; the tensors of larger modules are in this table, by
  // their index in Tensors(m), the first of a name (a hostile manifest's
  // module of a million tensors stays O(1)).
  static constexpr std::uint32_t kSearchedTensors = 16;
  absl::flat_hash_map<std::pair<ModuleId, absl::string_view>, std::uint32_t> large_module_tensors;
  // Some tensor's local name holds a dot (never in torch, where attribute
  // names cannot): a name cannot then be split at its last dot, and every
  // tensor's full name is in this table instead (the first module listed
  // keeps a name two could give).
  bool dotted_tensor_names = false;
  absl::flat_hash_map<std::string, ModuleId> tensor_owner;

  // A module's ranges of the flat arrays.
  absl::string_view Path(ModuleId id) const {
    const ModuleRecord& r = modules[id];
    return absl::string_view(chars.data() + r.path, r.path_size);
  }
  absl::Span<const ModuleId> Children(ModuleId id) const {
    const ModuleRecord& r = modules[id];
    return absl::MakeConstSpan(children.data() + r.first_child, r.child_count);
  }
  // Its parameters, then its buffers.
  absl::Span<const TensorSpec> Tensors(ModuleId id) const {
    const ModuleRecord& r = modules[id];
    return absl::MakeConstSpan(tensors.data() + r.first_tensor,
                               r.parameter_count + r.buffer_count);
  }
  absl::Span<const ForwardEvent> Events(ModuleId id) const {
    const ModuleRecord& r = modules[id];
    return absl::MakeConstSpan(events.data() + r.first_event, r.event_count);
  }
};

// Builds a ManifestRep: modules added in order, each with its path (the
// parent's path, a dot and the last atom), class and tensors; then the
// links (parents, children in order, calls) set, and Finish() lays out the
// spans and the lookup tables. The reader (manifest_reader.cc) and
// Manifest::FromModulePaths build through it.
class ManifestBuilder {
 public:
  explicit ManifestBuilder(ManifestRep* rep) : rep_(rep) {}

  // A string kept once in the rep, for the lifetime of the rep.
  absl::string_view Intern(absl::string_view s);
  // Appends a module with this path and class; returns its id.
  ModuleId AddModule(absl::string_view path, absl::string_view class_name,
                     absl::string_view qualified_class);
  void SetClass(ModuleId id, absl::string_view class_name, absl::string_view qualified_class);
  // Appends a tensor to the last module added: its parameters first, then
  // its buffers.
  void AddTensor(bool buffer, absl::string_view name, absl::Span<const std::int64_t> shape,
                 absl::string_view dtype);
  // Appends an event to the last module added (marking it traced): a call
  // (callee set later with SetCall) or an operation and the names it reads
  // (each one of the module's tensors, interned).
  void StartForward();
  void AddCall();
  void AddOp(absl::string_view op, absl::Span<const absl::string_view> reads);
  void SetCall(ModuleId module, std::size_t event, ModuleId callee);

  // The tensors of the last module added, as added so far.
  absl::Span<const TensorSpec> LastTensors() const;

  // The modules naming each module as their parent (set by SetParent), in
  // manifest order: module m's are children[first[m] .. first[m + 1]).
  struct ChildLayout {
    std::vector<ModuleId> children;
    std::vector<std::size_t> first;  // size() + 1 entries
  };
  ChildLayout ChildrenByParent() const;
  // Lays out the children: module m's are layout.children[layout.first[m]
  // .. layout.first[m + 1]), in registration order.
  void SetChildren(ChildLayout layout);
  void SetParent(ModuleId id, ModuleId parent);

  // Fixes the spans and indexes the paths: InvalidArgument naming `origin`
  // on a duplicate path. Then the links may be set; FinishLinks computes
  // depths, variable names, numbered children and their table.
  absl::Status IndexPaths(absl::string_view origin);
  void FinishLinks();

 private:
  ManifestRep* rep_;
  absl::flat_hash_map<absl::string_view, absl::string_view> interned_;
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, std::uint32_t> classes_;
  // While building, a tensor's shape and an event's reads are offsets into
  // dims / reads (which may still move), made spans by IndexPaths.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> shape_ranges_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> read_ranges_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_MANIFEST_REP_H_
