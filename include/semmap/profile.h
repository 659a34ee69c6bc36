// Profile: where an ONNX Runtime run spent its time, by module.
//
// ONNX Runtime writes a profile when SessionOptions.enable_profiling is set:
// a Chrome trace (a JSON array of events, or an object holding one under
// "traceEvents"). Each kernel execution is an event with "cat": "Node",
// "name": "<node name>_kernel_time", "dur" in microseconds and "args" with
// "op_name" and "provider"; "cat": "Session" events time whole runs
// ("model_run"). semmap reads those, finds each profiled node in the graph
// by name, and adds its time to the node's module.
//
//   absl::StatusOr<semmap::Profile> p = semmap::Profile::Load("ort_profile.json");
//   absl::StatusOr<semmap::ProfileAttribution> a = semmap::AttributeProfile(*mapper, *p);
//   for (const semmap::GroupTime& c : a->classes) std::cout << c.name << " " << c.us << "\n";
//
// The graph must be the one the session ran. ONNX Runtime optimizes the
// graph before running it (fusions, constant folding, layout changes), so
// a profile names nodes the exported file may not have: save the session's
// graph with SessionOptions.optimized_model_filepath and map that file,
// with MapperOptions::reference set to the export (semmap map --reference)
// so fused nodes get their modules. Time that cannot be given to a module
// is counted by reason (ProfileAttribution::unattributed), never dropped
// silently.
//
// Thread-safety: Profile and ProfileAttribution are plain values.
#ifndef SEMMAP_INCLUDE_SEMMAP_PROFILE_H_
#define SEMMAP_INCLUDE_SEMMAP_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"

namespace semmap {

struct SEMMAP_EXPORT ProfileOptions {
  // Files above this size are refused (InvalidArgument). Load maps the
  // file and reads one event at a time: memory is the profiled nodes kept
  // (one per distinct node name), not a multiple of the file.
  std::uint64_t max_file_bytes = std::uint64_t{1} << 30;
  // More trace events than this are refused (InvalidArgument).
  std::size_t max_events = 20'000'000;
  // Deeper JSON nesting than this is refused before parsing.
  int max_nesting = 64;
};

// One profiled node: every kernel event that named it, summed.
struct SEMMAP_EXPORT ProfiledNode {
  std::string name;      // node name as profiled (without "_kernel_time")
  std::string op_name;   // args.op_name of its first event ("" when absent)
  std::string provider;  // args.provider of its first event
  std::int64_t us = 0;   // total duration, microseconds
  std::int64_t calls = 0;
};

class SEMMAP_EXPORT Profile {
 public:
  // Reads a profile file. Errors (messages start with the file name):
  // NotFound (missing file), InvalidArgument (empty, not JSON with the byte
  // offset, not a trace, an event of the wrong shape with its JSON pointer
  // such as "/12/dur", above a limit of ProfileOptions), ResourceExhausted
  // (out of memory).
  static absl::StatusOr<Profile> Load(const std::string& path,
                                      const ProfileOptions& options = {});
  // Same, from the file's text; `origin` names the source in messages.
  static absl::StatusOr<Profile> Parse(absl::string_view json, absl::string_view origin,
                                       const ProfileOptions& options = {});

  // Profiled nodes in the order of their first event.
  const std::vector<ProfiledNode>& nodes() const { return nodes_; }
  std::int64_t kernel_us() const { return kernel_us_; }        // all kernel events
  std::int64_t kernel_events() const { return kernel_events_; }
  // "model_run" session events: runs and their total wall time.
  std::int64_t runs() const { return runs_; }
  std::int64_t run_us() const { return run_us_; }
  // Providers seen on kernel events, sorted.
  const std::vector<std::string>& providers() const { return providers_; }
  // Events of other categories or phases, skipped.
  std::int64_t skipped_events() const { return skipped_events_; }

 private:
  Profile() = default;
  std::vector<ProfiledNode> nodes_;
  std::int64_t kernel_us_ = 0;
  std::int64_t kernel_events_ = 0;
  std::int64_t runs_ = 0;
  std::int64_t run_us_ = 0;
  std::vector<std::string> providers_;
  std::int64_t skipped_events_ = 0;
};

// Time of one module, its subtree, a layer, a class, a category.
struct SEMMAP_EXPORT ModuleTime {
  ModuleId module = kNoModule;
  std::int64_t own_us = 0;      // nodes mapped to this module
  std::int64_t subtree_us = 0;  // this module and its descendants
  std::int64_t own_calls = 0;
  std::int64_t subtree_calls = 0;
  std::size_t own_nodes = 0;    // distinct profiled nodes
  std::size_t subtree_nodes = 0;
};

// An item of a repeated container (SemanticQuery::repeatedContainers()),
// its whole subtree.
struct SEMMAP_EXPORT LayerTime {
  ModuleId container = kNoModule;
  std::int64_t index = 0;
  ModuleId item = kNoModule;
  std::int64_t us = 0;
  std::int64_t calls = 0;
  std::size_t nodes = 0;
};

// Nodes grouped by a name: a module class, a semantic category, an op type.
struct SEMMAP_EXPORT GroupTime {
  std::string name;  // "" for nodes without one (category: no rule matched)
  std::int64_t us = 0;
  std::int64_t calls = 0;
  std::size_t nodes = 0;
};

// Why profiled time went to no module.
enum class UnattributedReason {
  kNotInGraph,      // no node of the graph has that name: the profile comes
                    // from another graph (the session's optimized one)
  kOpTypeMismatch,  // the node with that name has another op type
  kUnmapped,        // the node is in the graph but semmap found no module
};
inline constexpr std::size_t kUnattributedReasonCount = 3;
// "not_in_graph", "op_type_mismatch", "unmapped".
SEMMAP_EXPORT absl::string_view UnattributedReasonName(UnattributedReason reason);

struct SEMMAP_EXPORT UnattributedTime {
  UnattributedReason reason = UnattributedReason::kNotInGraph;
  std::size_t nodes = 0;  // distinct profiled node names
  std::int64_t us = 0;
  std::int64_t calls = 0;
  std::vector<std::string> examples;  // up to 5 node names, largest time first
};

struct SEMMAP_EXPORT ProfileAttribution {
  std::int64_t kernel_us = 0;      // Profile::kernel_us()
  std::int64_t attributed_us = 0;  // given to a module
  std::size_t profiled_nodes = 0;  // distinct profiled names
  std::size_t attributed_nodes = 0;
  // Per graph node (indexed like Graph::nodes()): its profiled time and
  // calls; 0 for nodes the profile does not name.
  std::vector<std::int64_t> node_us;
  std::vector<std::int64_t> node_calls;
  // Indexed by ModuleId, every module of the mapper's manifest. The root's
  // subtree_us is attributed_us.
  std::vector<ModuleTime> modules;
  // Items of every repeated container, container by container in manifest
  // order, items in index order.
  std::vector<LayerTime> layers;
  // Own time by module class name, semantic category and op type
  // (QualifiedOpType), largest first; each list sums to attributed_us.
  std::vector<GroupTime> classes;
  std::vector<GroupTime> categories;
  std::vector<GroupTime> op_types;
  // One entry per reason with time or nodes, in reason order. attributed_us
  // plus their us is kernel_us.
  std::vector<UnattributedTime> unattributed;
  // With AttributionOptions::split_fused: the fused nodes whose time was
  // divided over their origins, and that time. An estimate: each part gets
  // the share of the export's nodes it replaced
  // (SemanticMapper::originSharesOf), not a measured time.
  std::size_t split_nodes = 0;
  std::int64_t split_us = 0;
};

struct SEMMAP_EXPORT AttributionOptions {
  // Divide the time of a node that replaced several modules' nodes (an ONNX
  // Runtime or onnxslim fusion, paired with its export through --reference
  // or a provenance record) over those modules, in proportion to the
  // export's nodes each one's part replaced. Off: all of it goes to the
  // node's one module (the part it still is, or the parts' common ancestor).
  bool split_fused = false;
};

// Attributes each profiled node's time to the module the mapper gives it.
// A profiled name is looked up as a node id or unique name of the graph
// (Graph::find); its op type must match the event's op_name when that is
// given. Never fails for a well-formed profile; ResourceExhausted when out
// of memory.
SEMMAP_EXPORT absl::StatusOr<ProfileAttribution> AttributeProfile(const SemanticMapper& mapper,
                                                                  const Profile& profile);
SEMMAP_EXPORT absl::StatusOr<ProfileAttribution> AttributeProfile(
    const SemanticMapper& mapper, const Profile& profile, const AttributionOptions& options);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_PROFILE_H_
