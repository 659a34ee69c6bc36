// Structural inference: the module of nodes whose names and metadata say
// nothing (graphs whose names were stripped, dynamo exports after tools that
// drop metadata_props), from the graph's structure and the manifest.
//
// Evidence, in order of strength:
//  1. Unnamed weights. Constant folding names a transposed Linear weight
//     "onnx::MatMul_123" or "val_88". The rank >= 2 initializers read by
//     unmapped nodes, in node order, are aligned with the manifest's
//     parameters that no initializer names, in module order, by shape (a
//     transposed rank-2 shape matches too). The step runs when initializer
//     names confirm the manifest, or when this alignment does by itself (a
//     long run of varied shapes, nearly all found: every weight of a CNN
//     with folded BatchNorms is anonymous).
//  2. Execution order. Exporters emit nodes in the order the forward pass
//     ran them, and a module's nodes run contiguously, nested in its
//     parent's. A node between two anchored nodes (mapped by their weights)
//     of modules A and B belongs to a module on the path A .. LCA(A, B) .. B:
//      - when the manifest records forward signatures, the module whose
//        operation it matched, in order, among those the signatures run
//        between A's weights and B's (forward_signature.h);
//      - the head of B when B is a model module (not a library module such
//        as torch's Linear) and everything the node computes flows only
//        into B (a normalisation's arithmetic before its weight);
//      - the tail of A, likewise, when it reads only A's results;
//      - a parameterless module next to that path whose ops the rules name
//        (an activation's Erf, Sigmoid, Relu; a pooling module's MaxPool),
//        with the single-input chain of ops around that op;
//      - otherwise the deepest model module on A's side whose interval
//        already holds every value the node reads (so a residual Add that
//        reads the layer's input is not given to the attention before it),
//        else LCA(A, B).
// Library modules and containers never own a node they do not anchor,
// unless a library module holds parameters of its own beside children (its
// forward runs ops between theirs: torch's MultiheadAttention).
// Answers carry Strategy::kStructure and confidences below 0.9; the
// neighbourhood step then settles constants, casts and shape computations
// by their consumers. Tools re-sort nodes (onnxslim, ONNX Runtime). Where
// names still carry the exporter's creation counter (dynamo's
// "node_MatMul_55", "val_93"; rule data), sorting by it restores the
// export's own order; only the nodes the exporter created carry one, so
// with forward signatures the step runs in that order and in the file's
// and keeps the one whose gaps the signatures explain better. Then, when the
// file's order agrees less with the manifest's module order than a
// depth-first re-linearisation of the graph (each node right after its
// inputs' producer chains, as a forward pass runs), the latter is used; an
// order that still disagrees lowers the confidence.
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_STRUCTURE_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_STRUCTURE_H_

#include <vector>

#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_context.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/tensor_evidence.h"
#include "mapping/strategies/neighbourhood.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

struct StructureCounts {
  std::size_t aligned_weights = 0;  // step 1
  double order_agreement = 0.0;     // share of anchor pairs in module order
  bool creation_order = false;      // ordered by the exporter's creation
                                    // counters in node and value names
  bool relinearised = false;        // the graph was re-sorted: its own
                                    // depth-first order was used instead
  std::size_t signature_matches = 0;  // nodes placed by forward signatures
  // What the order says, for the neighbourhood step; empty when the order
  // is not trusted.
  OrderHints hints;
};

// Fills unmapped entries of the context's records (module, confidence,
// strategy and evidence). `shape` marks shape
// computations (ShapeComputations()): they are left to the neighbourhood.
// Linear in the graph size times the manifest depth.
StructureCounts InferFromStructure(const MappingContext& context, const std::vector<bool>& shape);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_STRUCTURE_H_
