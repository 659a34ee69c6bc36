#include "semmap/diff.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "io/json_writer.h"
#include "semmap/tree.h"

namespace semmap {
namespace {

using internal::JsonWriter;

// Node keys of a graph (see diff.h), indexed like Graph::nodes().
std::vector<std::string> NodeKeys(const Graph& graph) {
  absl::flat_hash_map<absl::string_view, int> name_count;
  for (const Node& n : graph.nodes()) ++name_count[n.name];
  std::vector<std::string> keys;
  keys.reserve(graph.size());
  for (const Node& n : graph.nodes()) {
    if (!n.name.empty() && name_count[n.name] == 1) {
      keys.emplace_back(n.name);
    } else {
      keys.push_back(absl::StrCat(QualifiedOpType(n), "->",
                                  n.outputs.empty() ? absl::string_view() : n.outputs.front()));
    }
  }
  return keys;
}

DiffNode MakeNode(const SemanticMapper& mapper, NodeId id, const std::string& key) {
  const Node& n = mapper.graph().node(id);
  const Mapping& m = mapper.moduleFor(id);
  DiffNode d;
  d.key = key;
  d.name = std::string(n.name);
  d.op_type = QualifiedOpType(n);
  d.module = std::string(m.module_path);
  d.mapped = m.mapped();
  d.confidence = m.confidence;
  return d;
}

// One side's modules by path: own and subtree node counts and own op
// histogram, as the full ModuleTree counts them.
class Side {
 public:
  explicit Side(const SemanticMapper& mapper) : tree_(ModuleTree::Build(mapper, Options())) {}

  std::size_t own(absl::string_view path) const {
    const TreeModule* m = find(path);
    return m == nullptr ? 0 : m->own_nodes;
  }
  std::size_t subtree(absl::string_view path) const {
    const TreeModule* m = find(path);
    return m == nullptr ? 0 : m->subtree_nodes;
  }
  std::map<std::string, std::size_t> ops(absl::string_view path) const {
    const TreeModule* m = find(path);
    return m == nullptr ? std::map<std::string, std::size_t>() : m->own_op_types;
  }

 private:
  static TreeOptions Options() {
    TreeOptions options;
    options.max_op_type_entries = 0;  // own histograms only
    return options;
  }
  const TreeModule* find(absl::string_view path) const {
    const int index = tree_.find(path);
    return index < 0 ? nullptr : &tree_.modules()[static_cast<std::size_t>(index)];
  }

  ModuleTree tree_;
};

// The share of the modules holding nodes in A that hold nodes in B; an
// error when below `min_overlap` (or when A's modules hold none).
absl::StatusOr<double> ModuleOverlap(const SemanticMapper& a, const Side& side_a,
                                     const Side& side_b, double min_overlap) {
  std::size_t holding = 0, shared = 0;
  for (const ModuleInfo& info : a.manifest().modules()) {
    if (info.path.empty() || side_a.subtree(info.path) == 0) continue;
    ++holding;
    if (side_b.subtree(info.path) > 0) ++shared;
  }
  const double overlap = holding == 0 ? 0.0 : static_cast<double>(shared) / holding;
  if (holding == 0 || overlap < min_overlap) {
    return absl::FailedPreconditionError(absl::StrCat(
        "unrelated models: ", shared, " of the ", holding,
        " modules holding nodes in A hold nodes in B (", static_cast<int>(100 * overlap),
        "%, need ", static_cast<int>(100 * min_overlap), "%)"));
  }
  return overlap;
}

// Modules holding nodes on either side: A's manifest order, then paths only
// B's manifest has.
std::vector<ModuleDelta> ModuleDeltas(const SemanticMapper& a, const SemanticMapper& b,
                                      const Side& side_a, const Side& side_b) {
  std::vector<ModuleDelta> out;
  absl::flat_hash_set<absl::string_view> listed;  // views of the manifests' paths
  auto add_module = [&](const ModuleInfo& info) {
    if (!listed.insert(info.path).second) return;
    if (side_a.subtree(info.path) == 0 && side_b.subtree(info.path) == 0) return;
    ModuleDelta d;
    d.path = std::string(info.path);
    d.class_name = std::string(info.class_name);
    d.own_a = side_a.own(info.path);
    d.own_b = side_b.own(info.path);
    d.subtree_a = side_a.subtree(info.path);
    d.subtree_b = side_b.subtree(info.path);
    d.ops_a = side_a.ops(info.path);
    d.ops_b = side_b.ops(info.path);
    out.push_back(std::move(d));
  };
  for (const ModuleInfo& info : a.manifest().modules()) add_module(info);
  for (const ModuleInfo& info : b.manifest().modules()) add_module(info);
  return out;
}

// True when `path` is `root` or below it (dotted paths; "" is the root).
bool InSubtree(absl::string_view path, absl::string_view root) {
  if (root.empty()) return true;
  return path == root || (path.size() > root.size() && path.substr(0, root.size()) == root &&
                          path[root.size()] == '.');
}

// Each object below lists its members in sorted key order, as the writer
// needs them.

void ModuleOrNull(JsonWriter& w, bool mapped, const std::string& module) {
  if (mapped) {
    w.String(module);
  } else {
    w.Null();
  }
}

void WriteNode(JsonWriter& w, const DiffNode& n) {
  w.BeginObject();
  w.Key("confidence").Number(n.confidence);
  w.Key("key").String(n.key);
  ModuleOrNull(w.Key("module"), n.mapped, n.module);
  w.Key("name").String(n.name);
  w.Key("op_type").String(n.op_type);
  w.EndObject();
}

void WriteNodes(JsonWriter& w, const std::vector<DiffNode>& nodes) {
  w.BeginArray();
  for (const DiffNode& n : nodes) WriteNode(w, n);
  w.EndArray();
}

void WriteOps(JsonWriter& w, const std::map<std::string, std::size_t>& ops) {
  w.BeginObject();  // a std::map: keys in sorted order already
  for (const auto& [op, count] : ops) w.Key(op).Integer(count);
  w.EndObject();
}

// {"a": a, "b": b} of two counts.
void WritePair(JsonWriter& w, std::size_t a, std::size_t b) {
  w.BeginObject();
  w.Key("a").Integer(a);
  w.Key("b").Integer(b);
  w.EndObject();
}

void WriteSide(JsonWriter& w, const std::string& model_class, std::size_t nodes) {
  w.BeginObject();
  w.Key("model_class").String(model_class);
  w.Key("nodes").Integer(nodes);
  w.EndObject();
}

// Fusion groups: B-only nodes by module; A-only nodes (`only_a`) go to the
// deepest group whose module contains theirs, or to the removed nodes.
void GroupFusions(const SemanticMapper& b, const std::vector<std::string>& keys_b,
                  const absl::flat_hash_set<absl::string_view>& in_a,
                  std::vector<DiffNode> only_a, ModelDiff* out) {
  ModelDiff& diff = *out;
  std::map<std::string, FusionGroup> groups;
  FusionGroup unmapped;
  unmapped.mapped = false;
  for (std::size_t i = 0; i < keys_b.size(); ++i) {
    if (in_a.contains(keys_b[i])) continue;
    DiffNode n = MakeNode(b, static_cast<NodeId>(i), keys_b[i]);
    if (!n.mapped) {
      unmapped.fused.push_back(std::move(n));
      continue;
    }
    FusionGroup& g = groups[n.module];
    g.module = n.module;
    g.fused.push_back(std::move(n));
  }
  for (DiffNode& n : only_a) {
    FusionGroup* best = nullptr;
    if (n.mapped) {
      for (auto& [path, group] : groups) {
        if (InSubtree(n.module, path) && (best == nullptr || path.size() > best->module.size())) {
          best = &group;
        }
      }
    }
    if (best != nullptr) {
      best->replaced.push_back(std::move(n));
    } else {
      diff.removed.push_back(std::move(n));
    }
  }
  for (auto& [path, group] : groups) diff.fusions.push_back(std::move(group));
  if (!unmapped.fused.empty()) diff.fusions.push_back(std::move(unmapped));
}

}  // namespace

absl::StatusOr<ModelDiff> DiffModels(const SemanticMapper& a, const SemanticMapper& b,
                                     const DiffOptions& options) {
  ModelDiff diff;
  diff.model_class_a = a.hasManifest() ? a.manifest().modelClass() : "";
  diff.model_class_b = b.hasManifest() ? b.manifest().modelClass() : "";
  diff.nodes_a = a.graph().size();
  diff.nodes_b = b.graph().size();
  if (options.require_same_model_class && a.hasManifest() && b.hasManifest() &&
      diff.model_class_a != diff.model_class_b) {
    return absl::FailedPreconditionError(absl::StrCat(
        "unrelated models: A is a ", diff.model_class_a, ", B is a ", diff.model_class_b,
        " (the manifests' model classes differ)"));
  }

  const Side side_a(a);
  const Side side_b(b);
  absl::StatusOr<double> overlap = ModuleOverlap(a, side_a, side_b, options.min_module_overlap);
  if (!overlap.ok()) return overlap.status();
  diff.module_overlap = *overlap;
  diff.modules = ModuleDeltas(a, b, side_a, side_b);

  // Nodes by key.
  const std::vector<std::string> keys_a = NodeKeys(a.graph());
  const std::vector<std::string> keys_b = NodeKeys(b.graph());
  absl::flat_hash_map<absl::string_view, NodeId> index_b;
  for (std::size_t i = 0; i < keys_b.size(); ++i) index_b.emplace(keys_b[i], static_cast<NodeId>(i));
  absl::flat_hash_set<absl::string_view> in_a(keys_a.begin(), keys_a.end());

  std::vector<DiffNode> only_a;
  for (std::size_t i = 0; i < keys_a.size(); ++i) {
    auto it = index_b.find(keys_a[i]);
    if (it == index_b.end()) {
      only_a.push_back(MakeNode(a, static_cast<NodeId>(i), keys_a[i]));
      continue;
    }
    ++diff.common_nodes;
    const Mapping& ma = a.moduleFor(static_cast<NodeId>(i));
    const Mapping& mb = b.moduleFor(it->second);
    if (ma.module_path != mb.module_path || ma.mapped() != mb.mapped()) {
      diff.moved.push_back({MakeNode(a, static_cast<NodeId>(i), keys_a[i]),
                            MakeNode(b, it->second, keys_b[it->second])});
    }
  }

  GroupFusions(b, keys_b, in_a, std::move(only_a), &diff);
  return diff;
}

std::string ModelDiffJson(const ModelDiff& diff, bool all_modules, int indent) {
  // Names come from the files: invalid UTF-8 is replaced rather than thrown.
  std::string text;
  JsonWriter w(&text, 0, indent);
  w.BeginObject();
  WriteSide(w.Key("a"), diff.model_class_a, diff.nodes_a);
  WriteSide(w.Key("b"), diff.model_class_b, diff.nodes_b);
  w.Key("common_nodes").Integer(diff.common_nodes);
  w.Key("format").String("semmap.diff");
  w.Key("fusions").BeginArray();
  for (const FusionGroup& g : diff.fusions) {
    w.BeginObject();
    WriteNodes(w.Key("fused"), g.fused);
    ModuleOrNull(w.Key("module"), g.mapped, g.module);
    WriteNodes(w.Key("replaced"), g.replaced);
    w.EndObject();
  }
  w.EndArray();
  w.Key("module_overlap").Number(diff.module_overlap);
  w.Key("modules").BeginArray();
  for (const ModuleDelta& m : diff.modules) {
    if (!all_modules && !m.changed()) continue;
    w.BeginObject();
    w.Key("class").String(m.class_name);
    w.Key("op_types").BeginObject();
    WriteOps(w.Key("a"), m.ops_a);
    WriteOps(w.Key("b"), m.ops_b);
    w.EndObject();
    WritePair(w.Key("own"), m.own_a, m.own_b);
    w.Key("path").String(m.path);
    WritePair(w.Key("subtree"), m.subtree_a, m.subtree_b);
    w.EndObject();
  }
  w.EndArray();
  w.Key("moved").BeginArray();
  for (const MovedNode& m : diff.moved) {
    w.BeginObject();
    w.Key("key").String(m.a.key);
    ModuleOrNull(w.Key("module_a"), m.a.mapped, m.a.module);
    ModuleOrNull(w.Key("module_b"), m.b.mapped, m.b.module);
    w.Key("op_type").String(m.a.op_type);
    w.EndObject();
  }
  w.EndArray();
  WriteNodes(w.Key("removed"), diff.removed);
  w.EndObject();
  text += "\n";
  return text;
}

}  // namespace semmap
