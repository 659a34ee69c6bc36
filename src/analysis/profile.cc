#include "semmap/profile.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/trace_events.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "io/json_nesting.h"
#include "io/mapped_file.h"
#include "semmap/query.h"
#include "semmap/tree.h"

namespace semmap {
namespace {


constexpr absl::string_view kKernelSuffix = "_kernel_time";
// One event longer than this (about 31 years) is not a measurement.
constexpr double kMaxEventUs = 1e15;

std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  if (b > 0 && a > std::numeric_limits<std::int64_t>::max() - b) {
    return std::numeric_limits<std::int64_t>::max();
  }
  return a + b;
}

// The checks of one event's members, with messages naming the event by
// its JSON pointer ("/12/dur").
class EventReader {
 public:
  EventReader(absl::string_view origin, const std::string* prefix)
      : origin_(origin), prefix_(prefix) {}

  absl::Status Error(std::size_t index, absl::string_view field, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": ", *prefix_, "/", index,
                                                   field.empty() ? "" : "/", field, ": ", what));
  }

  // The string `f` (named `field`), or nullptr when absent; an error when
  // present with another type.
  absl::StatusOr<const std::string*> OptionalString(const internal::TraceField& f,
                                                    std::size_t index, const char* field) const {
    if (!f.present()) return nullptr;
    if (!f.is("string")) return Error(index, field, absl::StrCat("expected a string, found ", f.type));
    return &f.text;
  }

  absl::StatusOr<std::int64_t> Duration(const internal::TraceField& f, std::size_t index) const {
    if (!f.present()) return Error(index, "dur", "missing (a kernel event needs a duration)");
    if (!f.is("number")) {
      return Error(index, "dur", absl::StrCat("expected a number, found ", f.type));
    }
    const double d = f.number;
    if (!std::isfinite(d) || d < 0 || d > kMaxEventUs) {
      return Error(index, "dur", absl::StrCat("not a duration in microseconds: ",
                                              internal::Abbreviate(f.text, 40)));
    }
    return static_cast<std::int64_t>(std::llround(d));
  }

 private:
  absl::string_view origin_;
  const std::string* prefix_;  // JSON pointer of the event array
};

}  // namespace

absl::string_view UnattributedReasonName(UnattributedReason reason) {
  switch (reason) {
    case UnattributedReason::kNotInGraph: return "not_in_graph";
    case UnattributedReason::kOpTypeMismatch: return "op_type_mismatch";
    case UnattributedReason::kUnmapped: return "unmapped";
  }
  return "unknown";
}

absl::StatusOr<Profile> Profile::Load(const std::string& path,
                                      const ProfileOptions& options) try {
  // Mapped, not read: the text costs no memory of its own beyond the pages
  // the kernel can drop again.
  SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile file,
                          internal::MappedFile::Open(path, options.max_file_bytes));
  absl::StatusOr<Profile> profile = Parse(file.bytes(), path, options);
  SEMMAP_RETURN_IF_ERROR(internal::NotTruncated(file, path));
  return profile;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(path, "loading the profile");
} catch (const std::length_error&) {
  return internal::OutOfMemory(path, "loading the profile");
}

// Long (about 70 lines): one event after another, each field checked with
// its own message naming the event's index; the checks are the function.
// Events are read one at a time (internal::ReadTraceEvents): memory is the
// profiled nodes kept, one per distinct name, not a multiple of the file.
absl::StatusOr<Profile> Profile::Parse(absl::string_view text, absl::string_view origin,
                                       const ProfileOptions& options) try {
  if (text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": empty file, expected an ONNX Runtime profile (JSON)"));
  }
  if (text.size() > options.max_file_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", text.size(),
                                                   " bytes, above the limit of ",
                                                   options.max_file_bytes));
  }
  SEMMAP_RETURN_IF_ERROR(internal::CheckJsonNesting(text, options.max_nesting, origin));
  Profile p;
  absl::flat_hash_map<std::string, std::size_t> by_name;
  std::set<std::string> providers;
  std::string prefix;
  const EventReader r(origin, &prefix);
  auto on_event = [&](std::size_t i, const internal::TraceEvent& e) -> absl::Status {
    SEMMAP_ASSIGN_OR_RETURN(const std::string* cat, r.OptionalString(e.cat, i, "cat"));
    SEMMAP_ASSIGN_OR_RETURN(const std::string* name, r.OptionalString(e.name, i, "name"));
    SEMMAP_ASSIGN_OR_RETURN(const std::string* ph, r.OptionalString(e.ph, i, "ph"));
    const bool complete = ph == nullptr || *ph == "X";
    if (cat != nullptr && *cat == "Session" && name != nullptr && *name == "model_run" &&
        complete) {
      SEMMAP_ASSIGN_OR_RETURN(std::int64_t dur, r.Duration(e.dur, i));
      ++p.runs_;
      p.run_us_ = SaturatingAdd(p.run_us_, dur);
      return absl::OkStatus();
    }
    if (cat == nullptr || *cat != "Node" || name == nullptr || !complete ||
        !absl::EndsWith(*name, kKernelSuffix)) {
      ++p.skipped_events_;  // fences, session phases, other tools' events
      return absl::OkStatus();
    }
    SEMMAP_ASSIGN_OR_RETURN(std::int64_t dur, r.Duration(e.dur, i));
    std::string op_name, provider;
    if (e.args.present()) {
      if (!e.args.is("object")) {
        return r.Error(i, "args", absl::StrCat("expected an object, found ", e.args.type));
      }
      SEMMAP_ASSIGN_OR_RETURN(const std::string* op, r.OptionalString(e.op_name, i, "op_name"));
      SEMMAP_ASSIGN_OR_RETURN(const std::string* pv, r.OptionalString(e.provider, i, "provider"));
      if (op != nullptr) op_name = *op;
      if (pv != nullptr) provider = *pv;
    }
    std::string node = name->substr(0, name->size() - kKernelSuffix.size());
    auto [it, inserted] = by_name.emplace(node, p.nodes_.size());
    if (inserted) {
      ProfiledNode n;
      n.name = std::move(node);
      n.op_name = std::move(op_name);
      n.provider = provider;
      p.nodes_.push_back(std::move(n));
    }
    ProfiledNode& n = p.nodes_[it->second];
    n.us = SaturatingAdd(n.us, dur);
    ++n.calls;
    ++p.kernel_events_;
    p.kernel_us_ = SaturatingAdd(p.kernel_us_, dur);
    if (!provider.empty()) providers.insert(provider);
    return absl::OkStatus();
  };
  SEMMAP_RETURN_IF_ERROR(
      internal::ReadTraceEvents(text, origin, options.max_events, &prefix, on_event));
  p.providers_.assign(providers.begin(), providers.end());
  return p;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "reading the profile");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "reading the profile");
}

namespace {

void AddTo(GroupTime& g, std::int64_t us, std::int64_t calls) {
  g.us = SaturatingAdd(g.us, us);
  g.calls += calls;
  ++g.nodes;
}

std::vector<GroupTime> Ranked(std::map<std::string, GroupTime> groups) {
  std::vector<GroupTime> out;
  out.reserve(groups.size());
  for (auto& [name, g] : groups) {
    g.name = name;
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const GroupTime& a, const GroupTime& b) { return a.us > b.us; });
  return out;
}

}  // namespace

// With the default options (the overload below).
absl::StatusOr<ProfileAttribution> AttributeProfile(const SemanticMapper& mapper,
                                                    const Profile& profile) {
  return AttributeProfile(mapper, profile, AttributionOptions());
}

namespace {

// `us` of node `id` divided over its origins by their shares (the largest
// remainder to the first origins), or nullopt-like empty when the node has
// no shares.
std::vector<std::pair<ModuleId, std::int64_t>> SplitByShares(const SemanticMapper& mapper,
                                                             NodeId id, std::int64_t us) {
  const absl::Span<const ModuleId> origins = mapper.originsOf(id);
  const absl::Span<const std::uint32_t> shares = mapper.originSharesOf(id);
  std::vector<std::pair<ModuleId, std::int64_t>> parts;
  if (shares.size() != origins.size() || origins.size() < 2) return parts;
  std::uint64_t total = 0;
  for (std::uint32_t s : shares) total += s;
  if (total == 0 || us <= 0) return parts;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < origins.size(); ++i) {
    const auto part = static_cast<std::int64_t>(static_cast<long double>(us) * shares[i] / total);
    parts.emplace_back(origins[i], part);
    given += part;
  }
  for (std::size_t i = 0; given < us; i = (i + 1) % parts.size(), ++given) ++parts[i].second;
  return parts;
}

}  // namespace

// Long (about 110 lines): each profiled node is looked up, then its time
// given to one module or, split, to its origins. One sweep over the
// profiled nodes fills every grouping at once (module, class, category, op
// type, reasons for unattributed time), then subtrees and layers are summed
// from the per-module times; splitting it would pass all the accumulators
// around.
absl::StatusOr<ProfileAttribution> AttributeProfile(const SemanticMapper& mapper,
                                                    const Profile& profile,
                                                    const AttributionOptions& options) try {
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  ProfileAttribution a;
  a.kernel_us = profile.kernel_us();
  a.profiled_nodes = profile.nodes().size();
  a.node_us.assign(graph.size(), 0);
  a.node_calls.assign(graph.size(), 0);
  a.modules.resize(manifest.size());
  for (std::size_t m = 0; m < manifest.size(); ++m) a.modules[m].module = static_cast<ModuleId>(m);

  std::vector<UnattributedTime> reasons(kUnattributedReasonCount);
  std::vector<std::vector<std::pair<std::int64_t, std::string>>> examples(
      kUnattributedReasonCount);
  std::map<std::string, GroupTime> classes, categories, op_types;
  const std::vector<std::string> module_categories = mapper.rules().categoriesOf(manifest);
  for (const ProfiledNode& p : profile.nodes()) {
    const NodeId id = graph.find(p.name);
    UnattributedReason reason = UnattributedReason::kUnmapped;
    bool attributed = false;
    if (id == kNoNode) {
      reason = UnattributedReason::kNotInGraph;
    } else if (!p.op_name.empty() && p.op_name != graph.node(id).op_type) {
      reason = UnattributedReason::kOpTypeMismatch;
    } else {
      a.node_us[id] = SaturatingAdd(a.node_us[id], p.us);
      a.node_calls[id] += p.calls;
      attributed = mapper.moduleFor(id).mapped();
    }
    if (!attributed) {
      UnattributedTime& u = reasons[static_cast<std::size_t>(reason)];
      u.reason = reason;
      ++u.nodes;
      u.us = SaturatingAdd(u.us, p.us);
      u.calls += p.calls;
      examples[static_cast<std::size_t>(reason)].emplace_back(p.us, p.name);
      continue;
    }
    const Mapping& m = mapper.moduleFor(id);
    std::vector<std::pair<ModuleId, std::int64_t>> parts;
    if (options.split_fused) parts = SplitByShares(mapper, id, p.us);
    if (parts.empty()) parts.emplace_back(m.module, p.us);
    if (parts.size() > 1) {
      ++a.split_nodes;
      a.split_us = SaturatingAdd(a.split_us, p.us);
    }
    for (const auto& [module, us] : parts) {
      // Time goes to each part; calls to the node's own module alone.
      const std::int64_t calls = module == m.module || parts.size() == 1 ? p.calls : 0;
      ModuleTime& mt = a.modules[module];
      mt.own_us = SaturatingAdd(mt.own_us, us);
      AddTo(classes[std::string(manifest.module(module).class_name)], us, calls);
      AddTo(categories[module_categories[static_cast<std::size_t>(module)]], us, calls);
    }
    ModuleTime& home = a.modules[m.module];
    home.own_calls += p.calls;
    ++home.own_nodes;
    a.attributed_us = SaturatingAdd(a.attributed_us, p.us);
    ++a.attributed_nodes;
    AddTo(op_types[QualifiedOpType(graph.node(id))], p.us, p.calls);
  }

  // Subtrees: children before parents, by depth.
  std::vector<ModuleId> order(manifest.size());
  for (std::size_t m = 0; m < order.size(); ++m) order[m] = static_cast<ModuleId>(m);
  std::stable_sort(order.begin(), order.end(), [&](ModuleId x, ModuleId y) {
    return manifest.depth(x) > manifest.depth(y);
  });
  for (ModuleTime& mt : a.modules) {
    mt.subtree_us = mt.own_us;
    mt.subtree_calls = mt.own_calls;
    mt.subtree_nodes = mt.own_nodes;
  }
  for (ModuleId m : order) {
    const ModuleId parent = manifest.parent(m);
    if (parent == kNoModule) continue;
    ModuleTime& p = a.modules[parent];
    const ModuleTime& c = a.modules[m];
    p.subtree_us = SaturatingAdd(p.subtree_us, c.subtree_us);
    p.subtree_calls += c.subtree_calls;
    p.subtree_nodes += c.subtree_nodes;
  }

  const SemanticQuery query(mapper);
  for (const RepeatedContainer& c : query.repeatedContainers()) {
    for (std::size_t i = 0; i < c.items.size(); ++i) {
      const ModuleTime& item = a.modules[c.items[i]];
      a.layers.push_back({c.module, c.indices[i], c.items[i], item.subtree_us,
                          item.subtree_calls, item.subtree_nodes});
    }
  }
  a.classes = Ranked(std::move(classes));
  a.categories = Ranked(std::move(categories));
  a.op_types = Ranked(std::move(op_types));
  for (std::size_t r = 0; r < kUnattributedReasonCount; ++r) {
    if (reasons[r].nodes == 0) continue;
    auto& ex = examples[r];
    std::stable_sort(ex.begin(), ex.end(),
                     [](const auto& x, const auto& y) { return x.first > y.first; });
    for (std::size_t i = 0; i < ex.size() && i < 5; ++i) {
      reasons[r].examples.push_back(std::move(ex[i].second));
    }
    a.unattributed.push_back(std::move(reasons[r]));
  }
  return a;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory("profile", "attributing the profile");
} catch (const std::length_error&) {
  return internal::OutOfMemory("profile", "attributing the profile");
}

}  // namespace semmap
