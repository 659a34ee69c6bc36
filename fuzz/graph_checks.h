// Invariants of a loaded semmap::Graph, shared by the ONNX fuzz targets.
#ifndef SEMMAP_FUZZ_GRAPH_CHECKS_H_
#define SEMMAP_FUZZ_GRAPH_CHECKS_H_

#include <cstddef>

#include "absl/container/flat_hash_set.h"
#include "fuzz_util.h"
#include "semmap/graph.h"

namespace semmap_fuzz {

inline void CheckGraph(const semmap::Graph& g, const semmap::GraphOptions& options) {
  SEMMAP_FUZZ_CHECK(g.size() <= options.max_nodes);
  SEMMAP_FUZZ_CHECK(!g.subgraphs().empty());
  SEMMAP_FUZZ_CHECK(g.subgraphs()[0].kind == semmap::Subgraph::Kind::kMain);
  const int subgraphs = static_cast<int>(g.subgraphs().size());
  const auto n = static_cast<semmap::NodeId>(g.size());
  for (int s = 0; s < subgraphs; ++s) {
    const semmap::Subgraph& sub = g.subgraphs()[s];
    if (sub.kind == semmap::Subgraph::Kind::kAttribute) {
      SEMMAP_FUZZ_CHECK(sub.owner >= 0 && sub.owner < n);
      SEMMAP_FUZZ_CHECK(sub.parent >= 0 && sub.parent < s);
      SEMMAP_FUZZ_CHECK(sub.depth == g.subgraphs()[sub.parent].depth + 1);
      SEMMAP_FUZZ_CHECK(sub.depth <= options.max_subgraph_depth);
      SEMMAP_FUZZ_CHECK(g.node(sub.owner).subgraph == sub.parent);
    } else {
      SEMMAP_FUZZ_CHECK(sub.parent == -1 && sub.depth == 0);
    }
  }
  absl::flat_hash_set<absl::string_view> ids;
  for (semmap::NodeId i = 0; i < n; ++i) {
    const semmap::Node& node = g.node(i);
    SEMMAP_FUZZ_CHECK(!node.id.empty());
    SEMMAP_FUZZ_CHECK(ids.insert(node.id).second);
    SEMMAP_FUZZ_CHECK(g.find(node.id) == i);
    SEMMAP_FUZZ_CHECK(node.subgraph >= 0 && node.subgraph < subgraphs);
    for (absl::string_view out : node.outputs) {
      if (out.empty()) continue;
      const semmap::NodeId p = g.producer(out, node.subgraph);
      SEMMAP_FUZZ_CHECK(p >= 0 && p < n);
      bool produces = false;
      for (absl::string_view o : g.node(p).outputs) produces |= o == out;
      SEMMAP_FUZZ_CHECK(produces);
    }
    for (absl::string_view in : node.inputs) {
      if (in.empty()) continue;
      const auto consumers = g.consumers(in, node.subgraph);
      for (std::size_t k = 0; k < consumers.size(); ++k) {
        SEMMAP_FUZZ_CHECK(consumers[k] >= 0 && consumers[k] < n);
        if (k > 0) SEMMAP_FUZZ_CHECK(consumers[k - 1] < consumers[k]);  // sorted, unique
      }
    }
  }
  for (const semmap::TensorInfo& t : g.initializers()) {
    SEMMAP_FUZZ_CHECK(t.subgraph >= 0 && t.subgraph < subgraphs);
    if (t.subgraph == 0) SEMMAP_FUZZ_CHECK(g.initializer(t.name) != nullptr);
  }
}

}  // namespace semmap_fuzz

#endif  // SEMMAP_FUZZ_GRAPH_CHECKS_H_
