#include "semmap/sidecar.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "io/atomic_write.h"
#include "io/json_writer.h"
#include "output/mapping_json.h"
#include "semmap/tree.h"
#include "semmap/version.h"

namespace semmap {
namespace {

using internal::JsonWriter;

// Each object below lists its members in sorted key order, as the writer
// needs them.

void WriteNodes(JsonWriter& w, const SemanticMapper& mapper) {
  w.BeginArray();
  for (std::size_t i = 0; i < mapper.graph().size(); ++i) {
    internal::WriteMappingObject(w, mapper, static_cast<NodeId>(i),
                                 internal::MappingJsonForm::kSidecar);
  }
  w.EndArray();
}

void WriteOpTypes(JsonWriter& w, const std::map<std::string, std::size_t>& op_types) {
  w.BeginObject();  // a std::map: keys in sorted order already
  for (const auto& [op_type, nodes] : op_types) w.Key(op_type).Integer(nodes);
  w.EndObject();
}

void WriteTree(JsonWriter& w, const SemanticMapper& mapper, bool model_specific) {
  TreeOptions options;
  options.model_specific_only = model_specific;
  const ModuleTree tree = ModuleTree::Build(mapper, options);
  const Manifest& manifest = mapper.manifest();
  w.BeginObject();
  w.Key("modules").BeginArray();
  for (const TreeModule& m : tree.modules()) {
    const ModuleInfo& info = tree.info(m);
    w.BeginObject();
    w.Key("children").BeginArray();
    for (int c : m.children) w.String(tree.info(tree.modules()[c]).path);
    w.EndArray();
    w.Key("class").String(info.class_name);
    w.Key("depth").Integer(m.depth);
    w.Key("folded").BeginArray();
    for (ModuleId f : m.folded) w.String(manifest.path(f));
    w.EndArray();
    WriteOpTypes(w.Key("op_types"), m.own_op_types);
    w.Key("own_nodes").Integer(m.own_nodes);
    w.Key("own_parameters").Integer(m.own_parameters);
    if (m.parent < 0) {
      w.Key("parent").Null();
    } else {
      w.Key("parent").String(tree.info(tree.modules()[m.parent]).path);
    }
    w.Key("path").String(info.path);
    w.Key("qualified_class").String(info.qualified_class);
    w.Key("subtree_nodes").Integer(m.subtree_nodes);
    WriteOpTypes(w.Key("subtree_op_types"), m.subtree_op_types);
    w.Key("subtree_parameters").Integer(m.subtree_parameters);
    w.EndObject();
  }
  w.EndArray();
  // Only when TreeOptions::max_op_type_entries emptied the subtree histograms.
  if (!tree.subtreeOpTypesComplete()) w.Key("subtree_op_types_complete").Bool(false);
  w.Key("unmapped_nodes").Integer(tree.unmappedNodes());
  w.Key("view").String(model_specific ? "model_specific" : "full");
  w.EndObject();
}

}  // namespace

std::string SidecarJson(const SemanticMapper& mapper, const SidecarOptions& options) {
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  std::string text;
  JsonWriter w(&text, 0, options.indent);
  w.BeginObject();
  w.Key("format").String("semmap.sidecar");
  w.Key("generator").BeginObject();
  w.Key("semmap").String(SEMMAP_VERSION_STRING);
  w.EndObject();
  if (mapper.hasManifest()) {
    w.Key("manifest").BeginObject();
    w.Key("model_class").String(manifest.modelClass());
    w.Key("modules").Integer(manifest.size());
    w.Key("path").StringOrNull(options.manifest_path);
    w.Key("qualified_class").String(manifest.modelQualifiedClass());
    w.EndObject();
  } else {
    w.Key("manifest").Null();
  }
  w.Key("model").BeginObject();
  w.Key("ir_version").Integer(graph.irVersion());
  w.Key("nodes").Integer(graph.size());
  w.Key("opset").Integer(graph.opset());
  w.Key("path").StringOrNull(options.model_path);
  w.Key("producer_name").String(graph.producerName());
  w.Key("producer_version").String(graph.producerVersion());
  w.EndObject();
  WriteNodes(w.Key("nodes"), mapper);
  const RootBinding& b = mapper.rootBinding();
  w.Key("root_binding").BeginObject();
  w.Key("root").String(manifest.path(b.root));
  w.Key("wrapper").Strings(b.wrapper);
  w.EndObject();
  w.Key("schema_version").Integer(kSidecarSchemaVersion);
  w.Key("summary").BeginObject();
  w.Key("mapped").Integer(mapper.mappedCount());
  // Strategies by name, as an object keeps its keys.
  const auto counts = mapper.strategyCounts();
  std::vector<std::pair<absl::string_view, std::size_t>> strategies;
  for (std::size_t s = 0; s < kStrategyCount; ++s) {
    strategies.emplace_back(StrategyName(static_cast<Strategy>(s)), counts[s]);
  }
  std::sort(strategies.begin(), strategies.end());
  w.Key("strategies").BeginObject();
  for (const auto& [name, count] : strategies) w.Key(name).Integer(count);
  w.EndObject();
  w.Key("unmapped").Integer(graph.size() - mapper.mappedCount());
  w.EndObject();
  WriteTree(w.Key("tree"), mapper, options.model_specific_tree);
  w.EndObject();
  text += "\n";
  return text;
}

std::string ModuleTreeJson(const SemanticMapper& mapper, bool model_specific, int indent) {
  std::string text;
  JsonWriter w(&text, 0, indent);
  WriteTree(w, mapper, model_specific);
  text += "\n";
  return text;
}

absl::Status WriteSidecar(const SemanticMapper& mapper, const std::string& output,
                          const SidecarOptions& options) try {
  SEMMAP_RETURN_IF_ERROR(internal::CheckOutputFor(
      output, {{options.model_path, "the model"}, {options.manifest_path, "the manifest"}},
      options.protected_paths, options.allow_overwrite));
  return internal::WriteFileAtomically(output, SidecarJson(mapper, options));
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "writing the sidecar");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "writing the sidecar");
}

}  // namespace semmap
