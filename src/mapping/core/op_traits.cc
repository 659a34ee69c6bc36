#include "mapping/core/op_traits.h"

#include "graph/node_fields.h"
#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {

// The rules are asked once per distinct op type: records name op types by
// their index in the graph's table of distinct strings, so a node's bits
// are an array lookup.
OpTraits::OpTraits(const Graph& graph, const Rules& rules) : kinds_(graph.size(), 0) {
  const NodeFields nodes(graph);
  std::vector<Kinds> by_op(nodes.opTypeCount(), 0);
  std::vector<bool> asked(nodes.opTypeCount(), false);
  const RuleQueries queries(rules);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeId id = static_cast<NodeId>(i);
    const std::uint32_t type = nodes.opTypeIndex(id);
    if (!asked[type]) {
      asked[type] = true;
      const absl::string_view op = nodes.opType(id);
      Kinds kinds = 0;
      for (std::size_t k = 0; k < kOpKindCount; ++k) {
        if (queries.Is(static_cast<OpKind>(k), op)) kinds |= static_cast<Kinds>(Kinds{1} << k);
      }
      by_op[type] = kinds;
    }
    kinds_[i] = by_op[type];
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
