// Where nodes sit in the model's forward, from the manifest's forward
// signatures (schema version 2), and what that places.
//
// Expanded from the manifest's root, the signatures list every op the
// model ran, in order, each with the module whose own code ran it (the
// calls). Nodes get places among them two ways:
//   - Names. The dynamo exporter names the node computing an FX node's
//     output after that FX node, and FX names the k-th call of an op
//     `<op>_<k>` in the order the forward ran (rules "op_call_names":
//     `node_linear_4` is the fifth `linear`). The tools after the exporter
//     (onnxslim, ONNX Runtime, the quantizers) drop the metadata but keep
//     these names. An op's names are used only where the export called it
//     exactly as often as the signatures recorded (a GELU's decomposition
//     adds `mul` calls, a tool removes nodes): the signatures record as
//     many calls as the highest number a node carries says, no number is
//     carried twice, and the places follow the graph's data flow (no node
//     sits at a call before a call or parameter read that produced one of
//     its inputs; a node reading a parameter sits in the parameter's
//     module). An op whose places break this is dropped, the op most often
//     at fault first, and the rest are checked again.
//   - Parameter reads. A node reading a parameter its module's signature
//     reads once, by an op that may be exported as the node's type (rules
//     "forward_ops"), sits at that read. Without names numbering calls,
//     these alone give places, when the graph's initializers name enough
//     of the manifest's parameters.
// Then each node has a window: after the calls its inputs come from, up
// to the first call reading its outputs. In it:
//   - an unplaced node goes to the one module whose calls there may export
//     it (not a shape computation, not a node a tool inserted);
//   - between named nodes, an unnamed weight goes to the one parameter of
//     its shape read there (several of one shape pair by creation counter);
//   - a node its parameter names whose type the reading op cannot export,
//     while one other module's op there can, does both modules' work (a
//     fused BiasGelu): their lowest common ancestor, with both as origins.
// Measured on the corpus's exports, plain and processed: every node the
// names place is right (docs/mapping.md, structure step 0).
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_OP_CALLS_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_OP_CALLS_H_

#include <cstdint>
#include <vector>

#include "mapping/core/mapping_context.h"
#include "mapping/strategies/forward_signature.h"

namespace semmap {
namespace internal {

// Where nodes sit in the model's forward: the root's forward signature
// with every call expanded, and each node's place in it.
struct OpCallPlaces {
  // Every op the model ran, in order, with the module whose own code ran
  // it (ops view the manifest's events).
  std::vector<ExpectedOp> calls;
  // Per node: the index in `calls` of the call it is named after, else of
  // the parameter read it makes, else of the one call its window placed it
  // in; -1 where none is known.
  std::vector<std::int64_t> place;

  bool empty() const { return place.empty(); }
};

// Maps each unmapped main-graph node whose name numbers a call the checks
// above keep (Strategy::kStructure, confidence::structure::kOpCall), then
// what the windows place (confidence::structure::kOpWindow; `shape` marks
// the shape computations, ShapeComputations()), and returns the places;
// empty when nothing has one. Linear in the graph and the expanded
// signatures, both bounded (docs/robustness.md): a manifest whose calls
// expand past 65,536 + 16 per graph node and manifest event places nothing.
OpCallPlaces PlaceOpCalls(const MappingContext& context, const std::vector<bool>& shape);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_OP_CALLS_H_
