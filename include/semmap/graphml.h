// GraphML: the mapped graph as nested graphs, one per module, for graph
// tools (yEd, Gephi, networkx, igraph).
//
//   semmap::GraphmlOptions options;
//   options.max_depth = 3;  // modules below depth 3 fold into one node
//   absl::StatusOr<semmap::GraphmlResult> r =
//       semmap::WriteGraphml(*mapper, "model.graphml", options);
//
// Layout of the document (GraphML 1.0, http://graphml.graphdrawing.org):
//   - every module with main-graph nodes in its subtree is a node holding a
//     nested <graph> with its submodules and ops; the node carries
//     yfiles.foldertype="group", the yEd convention networkx's reader and
//     yEd follow for compound nodes. The root module is the document's
//     graph itself; ops mapped to the root or to no module sit at its top
//     level;
//   - every node of the main graph is an op node; nodes of If/Loop/Scan
//     bodies belong to their owner and are not drawn. Nested graph ids are
//     "cluster_m<N>", so Graphviz draws them as boxes;
//   - graph inputs and outputs are nodes of their own at the top level;
//     initializers are not drawn (they would outnumber the ops);
//   - one directed edge per (producer, consumer, value): the value name is
//     the edge's "tensor" data. A value read by a body inside a consumer is
//     an edge to that consumer. All edges sit in the top-level graph.
// With max_depth >= 0, a module at that depth with nodes in its subtree is
// drawn as one node (kind "module", collapsed true) standing for all of
// them; edges are redirected to it and edges inside it dropped, so one
// (source, target, value) edge remains however many ops it stands for.
//
// Data keys (attr.name; GraphML types): nodes: kind ("module", "op",
// "input", "output"), label, module, class, collapsed (boolean), nodes
// (long: nodes in a module's subtree), op_type, domain, name (the ONNX node
// name), category, confidence (double), strategy, time_us (long, with a
// profile); edges: tensor. Labels are also written as yEd node graphics
// (the form yEd's own files use), so yEd needs no properties mapping.
// Names from the model are untrusted: text is XML-escaped, invalid UTF-8
// and characters XML 1.0 forbids become U+FFFD.
//
// Errors from WriteGraphml (messages start with the output path):
//   InvalidArgument   output is the model or manifest file (without
//                     allow_overwrite), or a directory; max_depth 0 or
//                     below -1
//   NotFound          output directory missing
//   PermissionDenied  output directory not writable
// The file is written atomically. Thread-safe: the mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_GRAPHML_H_
#define SEMMAP_INCLUDE_SEMMAP_GRAPHML_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "semmap/export.h"
#include "semmap/mapper.h"
#include "semmap/profile.h"

namespace semmap {

struct SEMMAP_EXPORT GraphmlOptions {
  // Depth (root = 0, so at least 1) at which modules are folded into one
  // node; -1 draws every module.
  int max_depth = -1;
  // Kernel time per op and per module (time_us), or null. Must be an
  // attribution of this mapper's graph.
  const ProfileAttribution* profile = nullptr;
  // Files WriteGraphml refuses to replace unless allow_overwrite.
  std::vector<std::string> protected_paths;
  bool allow_overwrite = false;
};

struct SEMMAP_EXPORT GraphmlResult {
  std::size_t module_groups = 0;     // modules drawn as nested graphs
  std::size_t collapsed_modules = 0; // modules drawn as one node
  std::size_t op_nodes = 0;          // ops drawn (not inside a collapsed module)
  std::size_t io_nodes = 0;          // graph inputs and outputs
  std::size_t edges = 0;
  std::size_t bytes = 0;
};

// The document as text, and what it holds.
SEMMAP_EXPORT absl::StatusOr<std::string> GraphmlText(const SemanticMapper& mapper,
                                                      const GraphmlOptions& options = {},
                                                      GraphmlResult* result = nullptr);
SEMMAP_EXPORT absl::StatusOr<GraphmlResult> WriteGraphml(const SemanticMapper& mapper,
                                                         const std::string& output,
                                                         const GraphmlOptions& options = {});

// `semmap graphml --json`: {"bytes", "collapsed_modules", "depth"
// (options.max_depth), "edges", "io_nodes", "model", "module_groups",
// "op_nodes", "output"}, without a final newline.
SEMMAP_EXPORT std::string GraphmlResultJson(const GraphmlResult& result,
                                            const GraphmlOptions& options,
                                            const std::string& model, const std::string& output);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_GRAPHML_H_
