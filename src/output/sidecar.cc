#include "semmap/sidecar.h"

#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "io/atomic_write.h"
#include "nlohmann/json.hpp"
#include "semmap/tree.h"
#include "semmap/version.h"

namespace semmap {
namespace {

using nlohmann::json;

json PathOrNull(const std::string& path) { return path.empty() ? json() : json(path); }

json NodesJson(const SemanticMapper& mapper) {
  const Graph& graph = mapper.graph();
  json nodes = json::array();
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(static_cast<NodeId>(i));
    const Mapping& m = mapper.moduleFor(static_cast<NodeId>(i));
    json entry = {{"id", n.id},
                  {"name", n.name},
                  {"op_type", n.op_type},
                  {"domain", n.domain},
                  {"subgraph", n.subgraph},
                  {"module", m.mapped() ? json(std::string(m.module_path)) : json()},
                  {"class", std::string(m.class_name)},
                  {"qualified_class", std::string(m.qualified_class)},
                  {"category", std::string(m.category)},
                  {"confidence", m.confidence},
                  {"strategy", std::string(StrategyName(m.strategy))},
                  {"evidence", m.evidence}};
    const std::vector<absl::string_view> origins = mapper.originPathsOf(static_cast<NodeId>(i));
    if (!origins.empty()) {
      json& list = entry["origins"] = json::array();
      for (absl::string_view o : origins) list.push_back(std::string(o));
    }
    nodes.push_back(std::move(entry));
  }
  return nodes;
}

json TreeJson(const SemanticMapper& mapper, bool model_specific) {
  TreeOptions options;
  options.model_specific_only = model_specific;
  const ModuleTree tree = ModuleTree::Build(mapper, options);
  const Manifest& manifest = mapper.manifest();
  json modules = json::array();
  for (const TreeModule& m : tree.modules()) {
    const ModuleInfo& info = tree.info(m);
    json children = json::array();
    for (int c : m.children) children.push_back(tree.info(tree.modules()[c]).path);
    json folded = json::array();
    for (ModuleId f : m.folded) folded.push_back(manifest.module(f).path);
    modules.push_back(
        {{"path", info.path},
         {"class", info.class_name},
         {"qualified_class", info.qualified_class},
         {"parent", m.parent < 0 ? json() : json(tree.info(tree.modules()[m.parent]).path)},
         {"depth", m.depth},
         {"children", children},
         {"own_nodes", m.own_nodes},
         {"subtree_nodes", m.subtree_nodes},
         {"own_parameters", m.own_parameters},
         {"subtree_parameters", m.subtree_parameters},
         {"op_types", m.own_op_types},
         {"subtree_op_types", m.subtree_op_types},
         {"folded", folded}});
  }
  json out = {{"view", model_specific ? "model_specific" : "full"},
              {"unmapped_nodes", tree.unmappedNodes()},
              {"modules", modules}};
  // Only when TreeOptions::max_op_type_entries emptied the subtree histograms.
  if (!tree.subtreeOpTypesComplete()) out["subtree_op_types_complete"] = false;
  return out;
}

}  // namespace

std::string SidecarJson(const SemanticMapper& mapper, const SidecarOptions& options) {
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  json doc;
  doc["format"] = "semmap.sidecar";
  doc["schema_version"] = kSidecarSchemaVersion;
  doc["generator"] = {{"semmap", SEMMAP_VERSION_STRING}};
  doc["model"] = {{"path", PathOrNull(options.model_path)},
                  {"nodes", graph.size()},
                  {"ir_version", graph.irVersion()},
                  {"opset", graph.opset()},
                  {"producer_name", graph.producerName()},
                  {"producer_version", graph.producerVersion()}};
  doc["manifest"] = mapper.hasManifest()
                        ? json{{"path", PathOrNull(options.manifest_path)},
                               {"model_class", manifest.modelClass()},
                               {"qualified_class", manifest.modelQualifiedClass()},
                               {"modules", manifest.size()}}
                        : json();
  const RootBinding& b = mapper.rootBinding();
  doc["root_binding"] = {{"root", manifest.module(b.root).path}, {"wrapper", b.wrapper}};
  json strategies = json::object();
  const auto counts = mapper.strategyCounts();
  for (std::size_t s = 0; s < kStrategyCount; ++s) {
    strategies[std::string(StrategyName(static_cast<Strategy>(s)))] = counts[s];
  }
  doc["summary"] = {{"mapped", mapper.mappedCount()},
                    {"unmapped", graph.size() - mapper.mappedCount()},
                    {"strategies", strategies}};
  doc["nodes"] = NodesJson(mapper);
  doc["tree"] = TreeJson(mapper, options.model_specific_tree);
  // Node names come from the file: replace invalid UTF-8 rather than throw.
  return doc.dump(options.indent, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string ModuleTreeJson(const SemanticMapper& mapper, bool model_specific, int indent) {
  return TreeJson(mapper, model_specific).dump(indent, ' ', false, json::error_handler_t::replace) +
         "\n";
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
