// Per-node op-type rule results, computed once per distinct op type: the
// rules' RE2 patterns are matched a few dozen times instead of once per node
// per pass. The kinds are one table (manifest/op_kinds.h).
#ifndef SEMMAP_SRC_MAPPING_CORE_OP_TRAITS_H_
#define SEMMAP_SRC_MAPPING_CORE_OP_TRAITS_H_

#include <cstdint>
#include <type_traits>
#include <vector>

#include "manifest/op_kinds.h"
#include "semmap/graph.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// Each node's op kinds (manifest/op_kinds.h): one bit per kind, the
// integer as wide as the table needs.
class OpTraits {
 public:
  OpTraits(const Graph& graph, const Rules& rules);

  // Whether node n's op type is of `kind` (RuleQueries::Is).
  bool Is(NodeId n, OpKind kind) const {
    return (kinds_[n] >> static_cast<int>(kind)) & 1u;
  }

  // Shorthands for the kinds most steps ask.
  bool FollowsConsumers(NodeId n) const { return Is(n, OpKind::kFollowsConsumers); }
  bool IsShapeSource(NodeId n) const { return Is(n, OpKind::kShapeSource); }
  bool IsWeightPassthrough(NodeId n) const { return Is(n, OpKind::kWeightPassthrough); }
  bool ReadsBlockwiseWeight(NodeId n) const { return Is(n, OpKind::kBlockwiseWeight); }
  bool IsQuantizerOp(NodeId n) const { return Is(n, OpKind::kQuantizer); }
  bool ReadsTransposedWeight(NodeId n) const { return Is(n, OpKind::kTransposedWeight); }
  // The node's inputs after the first are arguments of its op (a shape,
  // axes, repeats).
  bool TakesShapeOperands(NodeId n) const { return Is(n, OpKind::kShapeOperands); }
  bool IsDequantizeOp(NodeId n) const { return Is(n, OpKind::kDequantize); }

 private:
  static_assert(kOpKindCount <= 64, "OpTraits holds at most 64 op kinds");
  using Kinds = std::conditional_t<
      kOpKindCount <= 8, std::uint8_t,
      std::conditional_t<kOpKindCount <= 16, std::uint16_t,
                         std::conditional_t<kOpKindCount <= 32, std::uint32_t, std::uint64_t>>>;
  std::vector<Kinds> kinds_;
};

// Whether node n's inputs commute: an op of the default domain of kind
// OpKind::kCommutative (rules "commutative_ops": Add, Mul, Max...), whose
// inputs are compared as a multiset. `node` is graph.node(n).
inline bool IsCommutative(const OpTraits& ops, NodeId n, const Node& node) {
  return node.domain.empty() && ops.Is(n, OpKind::kCommutative);
}

// Whether node `consumer` reads `value` only as an argument of its op (rules
// "shape_operand_ops": an input after the first, such as a Reshape's
// shape or an Unsqueeze's axes), not as the data it computes on.
bool ReadsAsArgument(const Graph& graph, const OpTraits& ops, NodeId consumer, ValueId value);

// Marks shape computations: Shape/Size nodes and nodes whose inputs all come
// from shape computations, constants or initializers (at least one from a
// shape computation). They compute the shape some other node uses.
std::vector<bool> ShapeComputations(const Graph& graph, const OpTraits& ops);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_OP_TRAITS_H_
