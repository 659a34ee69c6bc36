// Graph-neighbourhood inference for nodes whose names carry no usable scope.
#ifndef SEMMAP_SRC_INTERNAL_NEIGHBOURHOOD_H_
#define SEMMAP_SRC_INTERNAL_NEIGHBOURHOOD_H_

#include <vector>

#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"
#include "internal/op_traits.h"

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
// Returns the number of passes run.
int InferFromNeighbourhood(const Graph& graph, const Manifest& manifest,
                           const OpTraits& ops, int max_passes,
                           std::vector<Mapping>* mappings);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_INTERNAL_NEIGHBOURHOOD_H_
