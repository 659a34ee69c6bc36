// What kind of node a Node is, for the passes that copy part of a graph
// (extract, stages).
#ifndef SEMMAP_SRC_GRAPH_NODE_KINDS_H_
#define SEMMAP_SRC_GRAPH_NODE_KINDS_H_

#include "semmap/graph.h"

namespace semmap {
namespace internal {

// A Constant of the default ONNX domain ("" or "ai.onnx") reading nothing:
// a value source with no producer of its own, copied with whatever part of
// the graph reads it rather than cut away from it.
inline bool IsConstantSource(const Node& n) {
  return n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") &&
         n.inputs.empty();
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_NODE_KINDS_H_
