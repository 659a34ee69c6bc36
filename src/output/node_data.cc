#include "semmap/node_data.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "io/atomic_write.h"
#include "io/json_writer.h"
#include "nlohmann/json.hpp"

namespace semmap {
namespace {

using nlohmann::json;

// Model Explorer applies the first threshold whose value is >= the node's.
json ConfidenceThresholds() {
  return json::array({{{"value", 0}, {"bgColor", "#e06666"}},
                      {{"value", 0.4999999}, {"bgColor", "#f6b26b"}},
                      {{"value", 0.8999999}, {"bgColor", "#ffe599"}},
                      {{"value", 1}, {"bgColor", "#93c47d"}}});
}

json TimeGradient() {
  return json::array({{{"stop", 0}, {"bgColor", "#ffffff"}},
                      {{"stop", 0.5}, {"bgColor", "#f6b26b"}},
                      {{"stop", 1}, {"bgColor", "#cc0000"}}});
}

}  // namespace

absl::StatusOr<std::string> ModelExplorerNodeDataJson(const SemanticMapper& mapper,
                                                      const ProfileAttribution* profile,
                                                      const NodeDataOptions& options,
                                                      NodeDataResult* result) try {
  const Graph& graph = mapper.graph();
  const bool time = options.value == NodeDataValue::kTime;
  if (time && profile == nullptr) {
    return absl::InvalidArgumentError("node data of kernel time needs a profile");
  }
  if (time && profile->node_us.size() != graph.size()) {
    return absl::InvalidArgumentError("the profile attribution is of another graph");
  }
  // Names used by more than one main-graph node cannot be node ids.
  absl::flat_hash_map<absl::string_view, int> name_count;
  for (const Node& n : graph.nodes()) {
    if (n.subgraph == 0 && !n.name.empty()) ++name_count[n.name];
  }
  json results = json::object();
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(static_cast<NodeId>(i));
    if (n.subgraph != 0) continue;
    std::string key;
    if (!n.name.empty() && name_count[n.name] == 1) {
      key = std::string(n.name);
    } else {
      for (absl::string_view o : n.outputs) {
        if (!o.empty()) {
          key = std::string(o);
          break;
        }
      }
    }
    if (key.empty()) continue;  // no name, no output: nothing to match
    if (time) {
      if (profile->node_us[i] == 0 && profile->node_calls[i] == 0) continue;
      results[key] = {{"value", profile->node_us[i]}};
    } else {
      results[key] = {{"value", mapper.moduleFor(static_cast<NodeId>(i)).confidence}};
    }
  }
  std::string graph_id(graph.subgraphs().empty() ? absl::string_view() : graph.subgraphs()[0].name);
  if (graph_id.empty()) graph_id = "<main>";  // as the ONNX adapter names it
  json data = {{"name", !options.name.empty() ? options.name
                        : time               ? "semmap kernel time (us)"
                                             : "semmap confidence"},
               {"results", results}};
  if (time) {
    data["gradient"] = TimeGradient();
  } else {
    data["thresholds"] = ConfidenceThresholds();
  }
  if (result != nullptr) *result = {graph_id, results.size()};
  return json({{graph_id, data}}).dump(1, ' ', false, json::error_handler_t::replace) + "\n";
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory("node data", "writing Model Explorer node data");
} catch (const std::length_error&) {
  return internal::OutOfMemory("node data", "writing Model Explorer node data");
}

absl::StatusOr<NodeDataResult> WriteModelExplorerNodeData(const SemanticMapper& mapper,
                                                          const ProfileAttribution* profile,
                                                          const std::string& output,
                                                          const NodeDataOptions& options) {
  SEMMAP_RETURN_IF_ERROR(
      internal::CheckOutputFor(output, {}, options.protected_paths, options.allow_overwrite));
  NodeDataResult result;
  absl::StatusOr<std::string> text = ModelExplorerNodeDataJson(mapper, profile, options, &result);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat(output, ": ", text.status().message()));
  }
  SEMMAP_RETURN_IF_ERROR(internal::WriteFileAtomically(output, *text));
  return result;
}

std::string NodeDataResultJson(const NodeDataResult& result, const NodeDataOptions& options,
                               const std::string& model, const std::string& output) {
  std::string text;
  internal::JsonWriter w(&text);
  w.BeginObject();
  w.Key("graph_id").String(result.graph_id);
  w.Key("model").String(model);
  w.Key("output").String(output);
  w.Key("results").Integer(result.results);
  w.Key("value").String(options.value == NodeDataValue::kTime ? "time" : "confidence");
  w.EndObject();
  return text;
}

}  // namespace semmap
