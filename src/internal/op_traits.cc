#include "internal/op_traits.h"

#include "absl/container/flat_hash_map.h"

namespace semmap {
namespace internal {

OpTraits::OpTraits(const Graph& graph, const Rules& rules) : bits_(graph.size(), 0) {
  absl::flat_hash_map<absl::string_view, std::uint8_t> by_op;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const std::string& op = graph.node(static_cast<NodeId>(i)).op_type;
    auto it = by_op.find(op);
    if (it == by_op.end()) {
      std::uint8_t bits = 0;
      if (rules.followsConsumers(op)) bits |= kFollows;
      if (rules.isShapeSource(op)) bits |= kShapeSource;
      if (rules.isWeightPassthrough(op)) bits |= kPassthrough;
      it = by_op.emplace(op, bits).first;
    }
    bits_[i] = it->second;
  }
}

}  // namespace internal
}  // namespace semmap
