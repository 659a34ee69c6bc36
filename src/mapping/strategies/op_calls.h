// Nodes whose names number the op call they compute, placed with the
// manifest's forward signatures.
//
// The dynamo exporter names the node computing an FX node's output after
// that FX node, and FX names the k-th call of an op `<op>_<k>` in the order
// the forward ran (rules "op_call_names": `node_linear_4` is the fifth
// `linear`). The tools after the exporter (onnxslim, ONNX Runtime, the
// quantizers) drop the nodes' metadata but keep these names. Expanded from
// the root, the forward signatures (schema version 2) list every op the
// model ran, in order, each with the module whose own code ran it; the k-th
// call of an op there is the node named after the k-th call.
//
// That holds only where the export called an op exactly as often as the
// signatures recorded it; an exporter's decomposition adds calls (a `mul`
// of a GELU), a tool removes nodes. So an op's names are used only when:
//   - the signatures record exactly as many calls of it as the highest
//     number a node carries says (plus one), and no number is carried
//     twice;
//   - the placements agree with the graph's data flow: no node sits at a
//     call earlier than a call or a weight read that produced one of its
//     inputs, and a node reading a parameter sits in that parameter's
//     module (a parameter read once in the signatures gives the read's
//     place). An op whose placements break this is dropped, the op most
//     often at fault first, and the rest are checked again.
// Measured on the corpus's dynamo exports (plain and processed), the names
// kept place every node they place right (docs/mapping.md).
//
// The places then bound the other nodes: a node runs after the calls its
// inputs come from and no later than the first call reading its outputs;
// when the calls in that window that may export as its op type (rules
// "forward_ops") are all one module's, that module ran it.
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
  // the parameter read it makes; -1 where none is known.
  std::vector<std::int64_t> place;

  bool empty() const { return place.empty(); }
};

// Maps each unmapped main-graph node whose name numbers a call the checks
// above keep (Strategy::kStructure, confidence::structure::kOpCall); then
// each other unmapped node, not a shape computation (`shape`,
// ShapeComputations()) nor one a tool inserted, whose window of calls
// (after those its inputs come from, up to the first that reads it) holds
// ops that may export as its type of one module only
// (confidence::structure::kOpWindow). Returns the places; empty when no
// op's names are kept. Linear in the graph and the expanded
// signatures, both bounded (docs/robustness.md): a manifest whose calls
// expand past 65,536 + 16 per graph node and manifest event places nothing.
OpCallPlaces PlaceOpCalls(const MappingContext& context, const std::vector<bool>& shape);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_OP_CALLS_H_
