#include "mapping/core/op_traits.h"

#include "graph/node_fields.h"
#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {

// The rules are asked once per distinct op type: records name op types by
// their index in the graph's table of distinct strings, so a node's bits
// are an array lookup.
OpTraits::OpTraits(const Graph& graph, const Rules& rules) : bits_(graph.size(), 0) {
  const NodeFields nodes(graph);
  constexpr std::uint16_t kUnknown = 0x100;
  std::vector<std::uint16_t> by_op(nodes.opTypeCount(), kUnknown);
  const RuleQueries queries(rules);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeId id = static_cast<NodeId>(i);
    std::uint16_t& known = by_op[nodes.opTypeIndex(id)];
    if (known == kUnknown) {
      const absl::string_view op = nodes.opType(id);
      std::uint8_t bits = 0;
      if (queries.FollowsConsumers(op)) bits |= kFollows;
      if (queries.IsShapeSource(op)) bits |= kShapeSource;
      if (queries.IsWeightPassthrough(op)) bits |= kPassthrough;
      if (queries.ReadsBlockwiseWeight(op)) bits |= kBlockwise;
      if (queries.IsQuantizerOp(op)) bits |= kQuantizer;
      if (queries.ReadsTransposedWeight(op)) bits |= kTransposed;
      if (queries.TakesShapeOperands(op)) bits |= kShapeOperands;
      if (queries.IsDequantizeOp(op)) bits |= kDequantize;
      known = bits;
    }
    bits_[i] = static_cast<std::uint8_t>(known);
  }
}

bool ReadsAsArgument(const Graph& graph, const OpTraits& ops, NodeId consumer, ValueId value) {
  if (!ops.TakesShapeOperands(consumer)) return false;
  const absl::Span<const ValueId> inputs = NodeFields(graph).inputValues(consumer);
  return inputs.empty() || inputs[0] != value;
}

std::vector<bool> ShapeComputations(const Graph& graph, const OpTraits& ops) {
  std::vector<bool> shape(graph.size(), false);
  // Main-graph nodes are topologically ordered; a second sweep settles
  // subgraph nodes that read outer values defined later in the list (and
  // nodes of a graph out of order). Without a node reading a later node's
  // output, the first sweep has settled every node.
  const NodeFields nodes(graph);
  bool later_producer = true;
  for (int sweep = 0; sweep < 2 && later_producer; ++sweep) {
    later_producer = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const NodeId id = static_cast<NodeId>(i);
      if (shape[i]) continue;
      if (ops.IsShapeSource(id)) {
        shape[i] = true;
        continue;
      }
      const absl::Span<const absl::string_view> inputs = nodes.inputs(id);
      const absl::Span<const ValueId> input_values = nodes.inputValues(id);
      bool from_shape = false;
      bool only_shape = !inputs.empty();
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const ValueId v = input_values[k];
        if (inputs[k].empty() || nodes.isInitializer(v)) continue;
        const NodeId p = nodes.producer(v);
        if (p != kNoNode && static_cast<std::size_t>(p) > i) later_producer = true;
        if (p == kNoNode) {
          only_shape = false;  // a graph input: real data
        } else if (shape[p]) {
          from_shape = true;
        } else if (!nodes.inputs(p).empty()) {
          only_shape = false;  // not a constant
        }
      }
      shape[i] = from_shape && only_shape;
    }
  }
  return shape;
}

}  // namespace internal
}  // namespace semmap
