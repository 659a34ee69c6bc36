// Colour refinement (Weisfeiler-Lehman) over a graph's main body: each
// round hashes a node's colour with its producers' and consumers' colours,
// so after k rounds two nodes have equal colours when their k-hop
// neighbourhoods look alike. Names play no part except where the caller
// says (values without a producer: graph inputs and initializers, whose
// names every tool keeps). Used to tell apart nodes that read the same
// values (two Shape nodes of one input), which differ only downstream.
#ifndef SEMMAP_SRC_MAPPING_CORE_GRAPH_COLOURS_H_
#define SEMMAP_SRC_MAPPING_CORE_GRAPH_COLOURS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/strings/string_view.h"
#include "mapping/core/op_traits.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

// Folds `v` into the hash `h` (the colours' mixing step; also the
// reference matcher's signature hashes).
inline std::uint64_t MixHash(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

struct GraphColours {
  std::vector<std::uint64_t> near;  // after kNearRounds
  std::vector<std::uint64_t> far;   // once the partition is stable
  static constexpr int kNearRounds = 3;
  static constexpr int kMaxRounds = 32;
};

// How a graph's values without a producer are coloured: `anchor` hashes
// one (0: unknown, counts as nothing in particular); `constant` marks
// nodes computing constants, whose payloads are unknown.
struct ColourInput {
  const Graph* graph = nullptr;
  std::function<std::uint64_t(absl::string_view)> anchor;
  const std::vector<char>* constant = nullptr;
  // The graph's op kinds: the inputs of a commutative op (IsCommutative)
  // are compared as a multiset.
  const OpTraits* ops = nullptr;
};

// Refines both graphs in lockstep, so that their colours compare: rounds
// run until neither partition gets finer (at most kMaxRounds), each linear
// in the graph. Subgraph nodes get colour 0.
void ColourGraphs(const ColourInput& a, const ColourInput& b, GraphColours* out_a,
                  GraphColours* out_b);

// Whether ColourGraphs would give node i of `a` exactly the colours of node
// i of `b`, for every i, without running it: the same number of nodes,
// each of the same op, domain, constancy, commutativity and input and
// output counts, the values written at each place one-to-one, each input
// read at the same place written by the same node at the same output, and
// each value without a producer anchored alike. A refinement reads nothing
// else, so its rounds are then the same on both. Linear; false for graphs
// with subgraphs (their outer reads count as the owners') or an input that
// names a value defined nowhere, which only the refinement itself compares.
// A copy whose tool renamed its nodes and values but kept their order
// passes; a re-sorted or rewired one does not.
bool ColouredAlikeByPosition(const ColourInput& a, const ColourInput& b);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_GRAPH_COLOURS_H_
