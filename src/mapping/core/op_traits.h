// Per-node op-type rule results, computed once per distinct op type: the
// rules' RE2 patterns are matched a few dozen times instead of once per node
// per pass.
#ifndef SEMMAP_SRC_MAPPING_CORE_OP_TRAITS_H_
#define SEMMAP_SRC_MAPPING_CORE_OP_TRAITS_H_

#include <cstdint>
#include <vector>

#include "semmap/graph.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

class OpTraits {
 public:
  OpTraits(const Graph& graph, const Rules& rules);

  bool FollowsConsumers(NodeId n) const { return bits_[n] & kFollows; }
  bool IsShapeSource(NodeId n) const { return bits_[n] & kShapeSource; }
  bool IsWeightPassthrough(NodeId n) const { return bits_[n] & kPassthrough; }
  bool ReadsBlockwiseWeight(NodeId n) const { return bits_[n] & kBlockwise; }
  bool IsQuantizerOp(NodeId n) const { return bits_[n] & kQuantizer; }
  bool ReadsTransposedWeight(NodeId n) const { return bits_[n] & kTransposed; }
  // Rules "shape_operand_ops": the node's inputs after the first are
  // arguments of its op (a shape, axes, repeats).
  bool TakesShapeOperands(NodeId n) const { return bits_[n] & kShapeOperands; }
  // Rules "dequantize_ops".
  bool IsDequantizeOp(NodeId n) const { return bits_[n] & kDequantize; }

 private:
  static constexpr std::uint8_t kFollows = 1;
  static constexpr std::uint8_t kShapeSource = 2;
  static constexpr std::uint8_t kPassthrough = 4;
  static constexpr std::uint8_t kBlockwise = 8;
  static constexpr std::uint8_t kQuantizer = 16;
  static constexpr std::uint8_t kTransposed = 32;
  static constexpr std::uint8_t kShapeOperands = 64;
  static constexpr std::uint8_t kDequantize = 128;
  std::vector<std::uint8_t> bits_;
};

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
