#include "mapping/core/graph_colours.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

namespace semmap {
namespace internal {
namespace {

std::uint64_t Mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

bool Commutative(const Node& n) {
  static const char* const kOps[] = {"Add", "Mul", "Sum", "Max", "Min", "Mean", "And",
                                     "Or", "Xor", "Equal", "BitwiseAnd", "BitwiseOr",
                                     "BitwiseXor"};
  if (!n.domain.empty()) return false;
  return std::find(std::begin(kOps), std::end(kOps), n.op_type) != std::end(kOps);
}

std::size_t IndexOf(absl::Span<const absl::string_view> names, absl::string_view value) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == value) return i;
  }
  return names.size();
}

}  // namespace

namespace {

class Refiner {
 public:
  explicit Refiner(const ColourInput& in) : in_(in), colour_(in.graph->size(), 0) {
    const absl::Hash<absl::string_view> hash;
    for (NodeId i = 0; i < static_cast<NodeId>(colour_.size()); ++i) {
      const Node& node = in_.graph->node(i);
      if (node.subgraph != 0) continue;
      std::uint64_t h = Mix(hash(node.op_type), hash(node.domain));
      h = Mix(h, node.inputs.size() * 1315423911ULL + node.outputs.size());
      colour_[i] = Mix(h, (*in_.constant)[i] ? 7 : 3);
    }
  }

  // One round; returns the number of distinct colours.
  std::size_t Step() {
    const Graph& graph = *in_.graph;
    std::vector<std::uint64_t> next(colour_.size(), 0);
    for (NodeId i = 0; i < static_cast<NodeId>(colour_.size()); ++i) {
      const Node& node = graph.node(i);
      if (node.subgraph != 0) continue;
      ins_.clear();
      for (absl::string_view in : node.inputs) {
        if (in.empty()) {
          ins_.push_back(1);
          continue;
        }
        const NodeId q = graph.producer(in, 0);
        ins_.push_back(q == kNoNode ? in_.anchor(in)
                                    : Mix(colour_[q], IndexOf(graph.node(q).outputs, in)));
      }
      if (Commutative(node)) std::sort(ins_.begin(), ins_.end());
      outs_.clear();
      for (std::size_t j = 0; j < node.outputs.size(); ++j) {
        if (node.outputs[j].empty()) continue;
        for (NodeId c : graph.consumers(node.outputs[j], 0)) {
          const Node& consumer = graph.node(c);
          const std::size_t at =
              Commutative(consumer) ? 0 : IndexOf(consumer.inputs, node.outputs[j]);
          outs_.push_back(Mix(Mix(colour_[c], j), at));
        }
      }
      std::sort(outs_.begin(), outs_.end());
      std::uint64_t h = Mix(colour_[i], 0x51ULL);
      for (std::uint64_t v : ins_) h = Mix(h, v);
      h = Mix(h, 0x52ULL);
      for (std::uint64_t v : outs_) h = Mix(h, v);
      next[i] = h;
    }
    colour_.swap(next);
    return absl::flat_hash_set<std::uint64_t>(colour_.begin(), colour_.end()).size();
  }

  std::vector<std::uint64_t>& colour() { return colour_; }

 private:
  const ColourInput& in_;
  std::vector<std::uint64_t> colour_;
  std::vector<std::uint64_t> ins_, outs_;
};

}  // namespace

void ColourGraphs(const ColourInput& a, const ColourInput& b, GraphColours* out_a,
                  GraphColours* out_b) {
  Refiner ra(a), rb(b);
  std::size_t distinct_a = 0, distinct_b = 0;
  for (int round = 1; round <= GraphColours::kMaxRounds; ++round) {
    const std::size_t da = ra.Step();
    const std::size_t db = rb.Step();
    if (round == GraphColours::kNearRounds) {
      out_a->near = ra.colour();
      out_b->near = rb.colour();
    }
    // A round that splits no class in either graph: stable from here on.
    if (round > GraphColours::kNearRounds && da == distinct_a && db == distinct_b) break;
    distinct_a = da;
    distinct_b = db;
  }
  if (out_a->near.empty()) out_a->near = ra.colour();
  if (out_b->near.empty()) out_b->near = rb.colour();
  out_a->far = std::move(ra.colour());
  out_b->far = std::move(rb.colour());
}

}  // namespace internal
}  // namespace semmap
