// Node data for Google's Model Explorer: a per-node value that the viewer
// shows on each node and colours it by (its "node data" overlay).
//
//   semmap::NodeDataOptions options;
//   options.value = semmap::NodeDataValue::kTime;
//   absl::Status s = semmap::WriteModelExplorerNodeData(*mapper, &attribution,
//                                                       "time.json", options);
//
// The file is Model Explorer's ModelNodeData JSON (model_explorer's
// node_data_builder.py): an object keyed by graph id, each value a
// GraphNodeData {"name", "results": {node key: {"value": number}},
// "thresholds" or "gradient"}. The ONNX adapter (model-explorer-onnx) uses
// the graph's name as graph id ("<main>" when the graph has none) and each
// node's name as node id; a node without a name, or one whose name is not
// unique, is keyed by its first output value's name, which Model Explorer
// also matches. Only nodes of the main graph are written.
//
// Values:
//   kConfidence  the mapping confidence of every node, 0 to 1, coloured by
//                thresholds: unmapped red, < 0.5 orange, < 0.9 yellow,
//                confident (>= 0.9, kConfidentFloor) green;
//   kTime        the profiled kernel time of each node that has one, in
//                microseconds summed over the profile's runs, coloured on a
//                white-to-red gradient.
//
// Errors (messages start with the output path): InvalidArgument (kTime
// without a profile attribution, or one of another graph; output is a
// protected input without allow_overwrite, or a directory), NotFound and
// PermissionDenied (output directory). Written atomically. Thread-safe: the
// mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_NODE_DATA_H_
#define SEMMAP_INCLUDE_SEMMAP_NODE_DATA_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "semmap/export.h"
#include "semmap/mapper.h"
#include "semmap/profile.h"

namespace semmap {

enum class NodeDataValue { kConfidence, kTime };

struct SEMMAP_EXPORT NodeDataOptions {
  NodeDataValue value = NodeDataValue::kConfidence;
  // Shown in Model Explorer; empty: "semmap confidence" or
  // "semmap kernel time (us)".
  std::string name;
  // Files the write refuses to replace unless allow_overwrite.
  std::vector<std::string> protected_paths;
  bool allow_overwrite = false;
};

struct SEMMAP_EXPORT NodeDataResult {
  std::string graph_id;
  std::size_t results = 0;  // nodes with a value
};

// The JSON text. `profile` is needed for kTime and ignored otherwise.
SEMMAP_EXPORT absl::StatusOr<std::string> ModelExplorerNodeDataJson(
    const SemanticMapper& mapper, const ProfileAttribution* profile,
    const NodeDataOptions& options, NodeDataResult* result = nullptr);
SEMMAP_EXPORT absl::StatusOr<NodeDataResult> WriteModelExplorerNodeData(
    const SemanticMapper& mapper, const ProfileAttribution* profile, const std::string& output,
    const NodeDataOptions& options);

// `semmap node-data --json`: {"graph_id", "model", "output", "results",
// "value" ("confidence" or "time")}, without a final newline.
SEMMAP_EXPORT std::string NodeDataResultJson(const NodeDataResult& result,
                                             const NodeDataOptions& options,
                                             const std::string& model, const std::string& output);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_NODE_DATA_H_
