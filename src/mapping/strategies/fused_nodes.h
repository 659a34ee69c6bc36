// Nodes that do the work of several modules: a Conv with its BatchNorm
// folded in by the exporter, an ONNX Runtime fusion (FusedConv,
// SkipLayerNormalization, Attention). Their origins are the modules whose
// operations they perform (OriginTable); their primary answer is the module
// whose operation the node still is when one part dominates, else the
// parts' lowest common ancestor.
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_FUSED_NODES_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_FUSED_NODES_H_

#include <cstddef>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mapping/core/fusion.h"
#include "mapping/core/mapping_context.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/origin_table.h"
#include "mapping/core/tensor_evidence.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {

// DominantModule (mapping/core/fusion.h) of `node` with these parts, the owners
// of the weights being those of the parameters it reads by name.
ModuleId DominantPart(const Graph& graph, NodeId node, absl::Span<const FusedPart> parts,
                      const Manifest& manifest, const TensorEvidence& tensors);

// A module whose tensors the exporter folded into the node of the module
// before it (a BatchNorm into its Conv) has no node of its own, and that
// node does the work of both. For each leaf module C with a weight of rank
// 2 or more whose manifest sibling right after it holds only vectors as
// long as C's output channels (and scalars), among them a buffer (running
// statistics: a fixed affine map at inference, unlike a LayerNorm's), has
// no module inside and no node mapped to it: the nodes mapped to C that read an initializer of C's
// weight's size, or a vector of C's output channels C does not hold (the
// bias the folding made), get origins {C, sibling}. Their answer stays C.
// Data movement (OpTraits: a Reshape of the bias) is left out.
// Reads the context's records, writes its origins.
void RecordFoldedNeighbours(const MappingContext& context);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_FUSED_NODES_H_
