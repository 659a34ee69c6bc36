#include "semmap/node_data.h"

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "io/atomic_write.h"
#include "io/json_writer.h"

namespace semmap {
namespace {

using internal::JsonWriter;

// {"bgColor": colour, key: value}: a threshold or a gradient's stop.
template <typename Number>
void ColourAt(JsonWriter& w, absl::string_view colour, absl::string_view key, Number value) {
  w.BeginObject();
  w.Key("bgColor").String(colour);
  if constexpr (std::is_integral<Number>::value) {
    w.Key(key).Integer(value);
  } else {
    w.Key(key).Number(value);
  }
  w.EndObject();
}

// Model Explorer applies the first threshold whose value is >= the node's.
void WriteConfidenceThresholds(JsonWriter& w) {
  w.BeginArray();
  ColourAt(w, "#e06666", "value", 0);
  ColourAt(w, "#f6b26b", "value", 0.4999999);
  ColourAt(w, "#ffe599", "value", 0.8999999);
  ColourAt(w, "#93c47d", "value", 1);
  w.EndArray();
}

void WriteTimeGradient(JsonWriter& w) {
  w.BeginArray();
  ColourAt(w, "#ffffff", "stop", 0);
  ColourAt(w, "#f6b26b", "stop", 0.5);
  ColourAt(w, "#cc0000", "stop", 1);
  w.EndArray();
}

// The "results" object: {key: {"value": v}} in key order.
template <typename Value>
void WriteResults(JsonWriter& w, const std::map<std::string, Value>& results) {
  w.BeginObject();
  for (const auto& [key, value] : results) {
    w.Key(key).BeginObject();
    if constexpr (std::is_integral<Value>::value) {
      w.Key("value").Integer(value);
    } else {
      w.Key("value").Number(value);
    }
    w.EndObject();
  }
  w.EndObject();
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
  // By key, the last node of a key winning (an output named like a node).
  std::map<std::string, std::int64_t> times;
  std::map<std::string, double> confidences;
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
      times[key] = profile->node_us[i];
    } else {
      confidences[key] = mapper.moduleFor(static_cast<NodeId>(i)).confidence;
    }
  }
  std::string graph_id(graph.subgraphs().empty() ? absl::string_view() : graph.subgraphs()[0].name);
  if (graph_id.empty()) graph_id = "<main>";  // as the ONNX adapter names it
  std::string text;
  JsonWriter w(&text, 0, 1);
  w.BeginObject();
  w.Key(graph_id).BeginObject();
  if (time) WriteTimeGradient(w.Key("gradient"));
  w.Key("name").String(!options.name.empty() ? options.name
                       : time               ? "semmap kernel time (us)"
                                            : "semmap confidence");
  if (time) {
    WriteResults(w.Key("results"), times);
  } else {
    WriteResults(w.Key("results"), confidences);
    WriteConfidenceThresholds(w.Key("thresholds"));
  }
  w.EndObject();
  w.EndObject();
  if (result != nullptr) *result = {graph_id, time ? times.size() : confidences.size()};
  text += "\n";
  return text;
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
