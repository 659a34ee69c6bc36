// Pairing each node of a processed graph (P) with the nodes of its
// reference export (R) it stands for: by name, by structure (the same op
// reading matched values), constants by position, fused nodes by the span
// of R they replaced. Linear in the size of the two graphs; the transfer
// (reference_transfer.h) turns the pairs into answers.
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_REFERENCE_MATCH_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_REFERENCE_MATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "semmap/graph.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// How a node of P was paired with R, strongest first.
enum class MatchRule : std::uint8_t {
  kNone = 0,
  kSameName,     // same node name and op type
  kStructure,    // same op type reading the same (matched) values
  kConstantOf,   // a Constant feeding a matched node at the position where
                 // R's counterpart reads a Constant
  kSpan,         // writes values of R: the R nodes between its matched
                 // inputs and those outputs (fused nodes)
  kDerivedName,  // name extends an R node name ("<node>_quant")
};

struct NodeMatch {
  MatchRule rule = MatchRule::kNone;
  // kSameName, kStructure, kConstantOf, kDerivedName: one R node.
  // kSpan: the R nodes replaced.
  // One node inline: a million matches allocate nothing more.
  absl::InlinedVector<NodeId, 1> reference_nodes;
  // kStructure: more than one R node had the same signature and the pairing
  // followed node order.
  bool ambiguous = false;
};

struct MatchLimits {
  // Passes of structural numbering (each linear in P).
  int max_structure_passes = 32;
  // R nodes visited when collecting one fused node's span (and 4 times as
  // many consumer edges); a larger span falls back to the producers of its
  // outputs.
  std::size_t max_span_nodes = 2048;
  // All spans of one match together visit at most this many R nodes and
  // edges per node and input edge of R (plus kSpanWorkFloor): the work and
  // the spans kept stay linear in the files whatever their shape. A span
  // found after that falls back to the producers of its outputs.
  std::size_t span_work_per_reference_item = 8;
  // Colour refinement, which tells apart R nodes of one signature, runs only
  // once a choice between two or more needs it (a copy that keeps R's
  // order and structure, checked node by node, needs it nowhere: its node
  // i has R node i's colours). false: both graphs are coloured first. The
  // pairs are the same either way.
  bool colours_on_demand = true;
};

// How a match went, for tests and measurements.
struct MatchTrace {
  bool aligned = false;   // P is R node for node (ColouredAlikeByPosition)
  bool coloured = false;  // the colour refinement ran
};

// The span work every match may do whatever the size of R.
inline constexpr std::size_t kSpanWorkFloor = std::size_t{1} << 16;

// One NodeMatch per node of P. Only P's main graph is matched by structure
// and spans; nodes of subgraph bodies match by name.
std::vector<NodeMatch> MatchToReference(const Graph& processed, const Graph& reference,
                                        const Rules& rules, const MatchLimits& limits = {},
                                        MatchTrace* trace = nullptr);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_REFERENCE_MATCH_H_
