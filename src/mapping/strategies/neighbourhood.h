// Graph-neighbourhood inference for nodes whose names carry no usable scope.
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_NEIGHBOURHOOD_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_NEIGHBOURHOOD_H_

#include <vector>

#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_context.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"

namespace semmap {
namespace internal {

// Fills unmapped entries of `mappings` (module and confidence only; the
// caller fills the string views) from their mapped neighbours, pass after
// pass until nothing changes or `max_passes` is reached:
//  - a node whose op the rules say follows its consumers (quantize, cast,
//    constants) takes their lowest common ancestor (kOpRule): 0.85 when
//    they agree, 0.6 otherwise;
//  - a node whose inputs come from no mapped producer (constants,
//    initializer-fed Identity/Cast) takes the lowest common ancestor of its
//    consumers' modules: 0.9 when they all agree, 0.6 otherwise;
//  - any other node takes the lowest common ancestor of its mapped
//    producers and consumers (0.15), or of one side only (0.1): measured,
//    such joins are rarely right.
// Each confidence is multiplied by the weakest neighbour's, so guesses
// built on guesses fade. Terminates on
// any graph, cycles included: a node is assigned at most once.
// `shape` marks shape computations (ShapeComputations()).
// Returns the number of passes run.
// What the graph's order says, when it can be trusted (InferFromStructure).
struct OrderHints {
  // Per node, the module of the next settled node after it; empty if unknown.
  std::vector<ModuleId> next_module;
  // Per module: owns no shape arithmetic (a library module or container).
  std::vector<bool> library;
};

// With `hints`, nodes that follow their consumers (and shape computations)
// take the lowest common ancestor of their consumers' module and the
// module running at their position (the next settled node's), and shape
// computations never land on a library module or container: the caller
// computes the shape it passes in.
int InferFromNeighbourhood(const MappingContext& context, const std::vector<bool>& shape,
                           const OrderHints& hints, int max_passes);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_NEIGHBOURHOOD_H_
