#include "mapping/core/graph_colours.h"

#include <algorithm>
#include <string>

#include "absl/hash/hash.h"
#include "base/parallel.h"

namespace semmap {
namespace internal {

namespace {

// The first of `values` that is `v`, or values.size().
std::size_t IndexOf(absl::Span<const ValueId> values, ValueId v) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == v) return i;
  }
  return values.size();
}

// Rounds read the graph through integers only: each node's value lists
// (views into the Graph), and for each value what an input of it
// contributes whatever the round (its producer and output position, or the
// anchor of a value without one), taken once. A round is then a linear
// sweep with no name hashed and no Node assembled.
class Refiner {
 public:
  explicit Refiner(const ColourInput& in)
      : in_(in),
        colour_(in.graph->size(), 0),
        commutative_(in.graph->size(), 0),
        main_(in.graph->size(), 0),
        node_inputs_(in.graph->size()),
        node_outputs_(in.graph->size()),
        source_(in.graph->valueCount(), kNoNode),
        source_term_(in.graph->valueCount(), 0),
        anchored_(in.graph->valueCount(), 0) {
    const Graph& graph = *in_.graph;
    const absl::Hash<absl::string_view> hash;
    for (NodeId i = 0; i < static_cast<NodeId>(colour_.size()); ++i) {
      const Node node = graph.node(i);
      node_inputs_[i] = node.input_values;
      node_outputs_[i] = node.output_values;
      commutative_[i] = IsCommutative(*in_.ops, i, node);
      if (node.subgraph != 0) continue;
      main_[i] = 1;
      std::uint64_t h = MixHash(hash(node.op_type), hash(node.domain));
      h = MixHash(h, node.inputs.size() * 1315423911ULL + node.outputs.size());
      colour_[i] = MixHash(h, (*in_.constant)[i] ? 7 : 3);
      for (std::size_t k = 0; k < node.inputs.size(); ++k) {
        const ValueId v = node.input_values[k];
        if (v < 0) {
          // A name defined nowhere: its anchor, asked each time it is read.
          if (!node.inputs[k].empty()) main_[i] = kReadsUnresolved;
          continue;
        }
        if (anchored_[v]) continue;
        anchored_[v] = 1;
        const NodeId q = graph.producer(v);
        if (q == kNoNode) {
          source_term_[v] = in_.anchor(node.inputs[k]);
        } else {
          source_[v] = q;
          source_term_[v] = IndexOf(graph.node(q).output_values, v);
        }
      }
    }
  }

  // One round; returns the number of distinct colours.
  std::size_t Step() {
    const Graph& graph = *in_.graph;
    std::vector<std::uint64_t> next(colour_.size(), 0);
    for (NodeId i = 0; i < static_cast<NodeId>(colour_.size()); ++i) {
      if (!main_[i]) continue;
      ins_.clear();
      const absl::Span<const ValueId> inputs = node_inputs_[i];
      if (main_[i] == kReadsUnresolved) {
        const Node node = graph.node(i);
        for (std::size_t k = 0; k < inputs.size(); ++k) {
          ins_.push_back(InputTerm(inputs[k], node.inputs[k]));
        }
      } else {
        for (ValueId v : inputs) ins_.push_back(InputTerm(v, absl::string_view()));
      }
      if (commutative_[i]) std::sort(ins_.begin(), ins_.end());
      outs_.clear();
      const absl::Span<const ValueId> outputs = node_outputs_[i];
      for (std::size_t j = 0; j < outputs.size(); ++j) {
        if (outputs[j] < 0) continue;
        for (NodeId c : graph.consumers(outputs[j])) {
          const std::size_t at = commutative_[c] ? 0 : IndexOf(node_inputs_[c], outputs[j]);
          outs_.push_back(MixHash(MixHash(colour_[c], j), at));
        }
      }
      std::sort(outs_.begin(), outs_.end());
      std::uint64_t h = MixHash(colour_[i], 0x51ULL);
      for (std::uint64_t v : ins_) h = MixHash(h, v);
      h = MixHash(h, 0x52ULL);
      for (std::uint64_t v : outs_) h = MixHash(h, v);
      next[i] = h;
    }
    colour_.swap(next);
    return CountDistinct();
  }

  std::vector<std::uint64_t>& colour() { return colour_; }

 private:
  // The number of distinct colours: an open-addressing set of the
  // colours (0 kept aside as the empty slot), reused from round to round.
  std::size_t CountDistinct() {
    std::size_t capacity = 16;
    while (capacity < 2 * colour_.size()) capacity <<= 1;
    seen_.assign(capacity, 0);
    const std::size_t mask = capacity - 1;
    std::size_t distinct = 0;
    bool zero = false;
    for (std::uint64_t c : colour_) {
      if (c == 0) {
        zero = true;
        continue;
      }
      // Colours are mixed hashes: their low bits spread well.
      for (std::size_t at = c & mask;; at = (at + 1) & mask) {
        if (seen_[at] == c) break;
        if (seen_[at] == 0) {
          seen_[at] = c;
          ++distinct;
          break;
        }
      }
    }
    return distinct + (zero ? 1 : 0);
  }

  // What input value v (named `name` when v is unresolved) contributes.
  std::uint64_t InputTerm(ValueId v, absl::string_view name) const {
    if (v < 0) return name.empty() ? 1 : in_.anchor(name);
    const NodeId q = source_[v];
    return q == kNoNode ? source_term_[v] : MixHash(colour_[q], source_term_[v]);
  }

  const ColourInput& in_;
  std::vector<std::uint64_t> colour_;
  std::vector<char> commutative_;
  static constexpr char kReadsUnresolved = 2;
  std::vector<char> main_;  // in the main graph: 1, or kReadsUnresolved
  std::vector<absl::Span<const ValueId>> node_inputs_, node_outputs_;
  // Per value read by a main-graph node: its producer (kNoNode: none) and
  // output position, or the anchor when it has no producer.
  std::vector<NodeId> source_;
  std::vector<std::uint64_t> source_term_;
  std::vector<char> anchored_;  // source_ filled
  std::vector<std::uint64_t> ins_, outs_;
  std::vector<std::uint64_t> seen_;  // CountDistinct's table
};

}  // namespace

void ColourGraphs(const ColourInput& a, const ColourInput& b, GraphColours* out_a,
                  GraphColours* out_b) {
  const bool parallel =
      std::min(a.graph->size(), b.graph->size()) >= internal::kParallelNodes;
  Refiner ra(a), rb(b);
  std::size_t distinct_a = 0, distinct_b = 0;
  for (int round = 1; round <= GraphColours::kMaxRounds; ++round) {
    std::size_t da = 0, db = 0;
    internal::RunBoth(parallel, [&] { da = ra.Step(); }, [&] { db = rb.Step(); });
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

// About 60 lines: the written values paired place by place first, so that
// an input read before its producer (an unsorted graph) is judged too.
bool ColouredAlikeByPosition(const ColourInput& a, const ColourInput& b) {
  const Graph& ga = *a.graph;
  const Graph& gb = *b.graph;
  if (ga.size() != gb.size()) return false;
  const auto n = static_cast<NodeId>(ga.size());
  std::vector<ValueId> written_as(ga.valueCount(), kNoValue);  // a's value -> b's
  std::vector<char> b_written(gb.valueCount(), 0);
  for (NodeId i = 0; i < n; ++i) {
    const Node x = ga.node(i);
    const Node y = gb.node(i);
    if (x.subgraph != 0 || y.subgraph != 0 || x.op_type != y.op_type || x.domain != y.domain ||
        x.inputs.size() != y.inputs.size() || x.outputs.size() != y.outputs.size() ||
        (*a.constant)[i] != (*b.constant)[i] ||
        IsCommutative(*a.ops, i, x) != IsCommutative(*b.ops, i, y)) {
      return false;
    }
    for (std::size_t j = 0; j < x.outputs.size(); ++j) {
      const ValueId u = x.output_values[j], v = y.output_values[j];
      if ((u < 0) != (v < 0)) return false;
      if (u < 0) continue;
      ValueId& slot = written_as[static_cast<std::size_t>(u)];
      if (slot == v) continue;
      if (slot != kNoValue || b_written[static_cast<std::size_t>(v)]) return false;
      slot = v;
      b_written[static_cast<std::size_t>(v)] = 1;
    }
  }
  // Values without a producer: b's value first read at the place a's is,
  // whose anchors were found equal.
  std::vector<ValueId> anchored_as(ga.valueCount(), kNoValue);
  for (NodeId i = 0; i < n; ++i) {
    const Node x = ga.node(i);
    const Node y = gb.node(i);
    for (std::size_t k = 0; k < x.inputs.size(); ++k) {
      const ValueId u = x.input_values[k], v = y.input_values[k];
      if (x.inputs[k].empty() != y.inputs[k].empty()) return false;
      if (u < 0 || v < 0) {
        if (u >= 0 || v >= 0 || !x.inputs[k].empty()) return false;
        continue;
      }
      const bool u_written = ga.producer(u) != kNoNode;
      if (u_written != (gb.producer(v) != kNoNode)) return false;
      if (u_written) {
        if (written_as[static_cast<std::size_t>(u)] != v) return false;
        continue;
      }
      ValueId& seen = anchored_as[static_cast<std::size_t>(u)];
      if (seen == v) continue;
      if (a.anchor(x.inputs[k]) != b.anchor(y.inputs[k])) return false;
      if (seen == kNoValue) seen = v;
    }
  }
  return true;
}

}  // namespace internal
}  // namespace semmap
