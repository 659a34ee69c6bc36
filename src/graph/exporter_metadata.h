// The module stack the dynamo exporter writes into node metadata_props.
//
// torch.onnx.export(..., dynamo=True) records, per node, the FX node's
// nn_module_stack:
//   pkg.torch.onnx.name_scopes     = "['', 'bert', 'bert.encoder', ..., 'linear']"
//   pkg.torch.onnx.class_hierarchy = "['...BertForSequenceClassification', ..., 'aten.linear.default']"
//   namespace = ": <root class>/bert: <class>/.../<fx name>: <target>"
// Module entries are full dotted paths ('' = root); the last entry of each
// list is the FX node itself, not a module.
#ifndef SEMMAP_SRC_GRAPH_EXPORTER_METADATA_H_
#define SEMMAP_SRC_GRAPH_EXPORTER_METADATA_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

struct ModuleStack {
  std::vector<std::string> paths;    // outermost first; root is ""
  std::vector<std::string> classes;  // qualified classes, aligned with paths
                                     // when the exporter wrote them
  const std::string& deepest() const { return paths.back(); }
  std::string deepestClass() const {
    return classes.size() == paths.size() ? classes.back() : std::string();
  }
};

// Reads the module stack from a node's metadata_props; false when the node
// carries none (or only the exporter's empty-stack marker).
bool ReadModuleStack(absl::Span<const MetadataEntry> metadata, ModuleStack* out);

// Whether the exporter's own optimizer rewrote the node from several nodes
// (onnxscript's rewriter names its rule in the node's metadata: a Conv
// with a BatchNorm folded in, labelled with the BatchNorm's stack).
bool RewrittenByExporter(absl::Span<const MetadataEntry> metadata);

// Parses a Python repr of a list of strings ("['a', \"b\"]"). False on
// anything else. Handles the escapes repr produces.
bool ParsePythonStringList(absl::string_view text, std::vector<std::string>* out);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_EXPORTER_METADATA_H_
