#include "mapping/core/op_traits.h"

#include "absl/container/flat_hash_map.h"
#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {

OpTraits::OpTraits(const Graph& graph, const Rules& rules) : bits_(graph.size(), 0) {
  absl::flat_hash_map<absl::string_view, std::uint8_t> by_op;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    absl::string_view op = graph.node(static_cast<NodeId>(i)).op_type;
    auto it = by_op.find(op);
    if (it == by_op.end()) {
      std::uint8_t bits = 0;
      if (internal::RuleQueries(rules).FollowsConsumers(op)) bits |= kFollows;
      if (internal::RuleQueries(rules).IsShapeSource(op)) bits |= kShapeSource;
      if (internal::RuleQueries(rules).IsWeightPassthrough(op)) bits |= kPassthrough;
      if (internal::RuleQueries(rules).ReadsBlockwiseWeight(op)) bits |= kBlockwise;
      if (internal::RuleQueries(rules).IsQuantizerOp(op)) bits |= kQuantizer;
      if (internal::RuleQueries(rules).ReadsTransposedWeight(op)) bits |= kTransposed;
      if (internal::RuleQueries(rules).TakesShapeOperands(op)) bits |= kShapeOperands;
      if (internal::RuleQueries(rules).IsDequantizeOp(op)) bits |= kDequantize;
      it = by_op.emplace(op, bits).first;
    }
    bits_[i] = it->second;
  }
}

bool ReadsAsArgument(const Graph& graph, const OpTraits& ops, NodeId consumer, ValueId value) {
  if (!ops.TakesShapeOperands(consumer)) return false;
  const Node n = graph.node(consumer);
  return n.input_values.empty() || n.input_values[0] != value;
}

std::vector<bool> ShapeComputations(const Graph& graph, const OpTraits& ops) {
  std::vector<bool> shape(graph.size(), false);
  // Main-graph nodes are topologically ordered; a second sweep settles
  // subgraph nodes that read outer values defined later in the list (and
  // nodes of a graph out of order). Without a node reading a later node's
  // output, the first sweep has settled every node.
  bool later_producer = true;
  for (int sweep = 0; sweep < 2 && later_producer; ++sweep) {
    later_producer = false;
    for (std::size_t i = 0; i < graph.size(); ++i) {
      const Node& n = graph.node(static_cast<NodeId>(i));
      if (shape[i]) continue;
      if (ops.IsShapeSource(static_cast<NodeId>(i))) {
        shape[i] = true;
        continue;
      }
      bool from_shape = false;
      bool only_shape = !n.inputs.empty();
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        const ValueId v = n.input_values[k];
        if (n.inputs[k].empty() || graph.initializerOf(v) != nullptr) continue;
        const NodeId p = graph.producer(v);
        if (p != kNoNode && static_cast<std::size_t>(p) > i) later_producer = true;
        if (p == kNoNode) {
          only_shape = false;  // a graph input: real data
        } else if (shape[p]) {
          from_shape = true;
        } else if (!graph.node(p).inputs.empty()) {
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
