// GraphBuilder: assembles a Graph from whichever loader read the file
// (protobuf_loader, wire_loader). Loaders call it in the traversal order of
// graph.h; it enforces GraphOptions' limits, assigns node ids and builds the
// indexes, so every loader gives the same Graph for the same model.
#ifndef SEMMAP_SRC_INTERNAL_GRAPH_BUILDER_H_
#define SEMMAP_SRC_INTERNAL_GRAPH_BUILDER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "internal/status_macros.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

// InvalidArgument for an opset_import version out of range (a varint above
// INT64_MAX reads as negative); both loaders refuse it alike.
absl::Status OpsetOutOfRange(absl::string_view origin, std::int64_t version);

class GraphBuilder {
 public:
  GraphBuilder(absl::string_view origin, const GraphOptions& options)
      : origin_(origin), options_(options) {}

  void SetModelInfo(std::int64_t ir_version, std::string producer_name,
                    std::string producer_version, std::int64_t opset,
                    std::vector<std::pair<std::string, std::string>> metadata);
  // Counts `n` more list entries against GraphOptions::max_list_entries:
  // call it before storing them. InvalidArgument above the limit.
  absl::Status Charge(std::size_t n);

  // The main graph's own inputs and outputs (Graph::inputs(), outputs()).
  absl::Status AddMainInput(std::string name) {
    SEMMAP_RETURN_IF_ERROR(Charge(1));
    g_.inputs_.push_back(std::move(name));
    return absl::OkStatus();
  }
  absl::Status AddMainOutput(std::string name) {
    SEMMAP_RETURN_IF_ERROR(Charge(1));
    g_.outputs_.push_back(std::move(name));
    return absl::OkStatus();
  }
  // A value defined without a producer in `subgraph` (graph or function input).
  absl::Status DefineValue(int subgraph, std::string name) {
    SEMMAP_RETURN_IF_ERROR(Charge(1));
    g_.defined_values_.emplace_back(subgraph, std::move(name));
    return absl::OkStatus();
  }
  // Charged one entry and one per dim.
  absl::Status AddInitializer(TensorInfo info) {
    SEMMAP_RETURN_IF_ERROR(Charge(1 + info.dims.size()));
    g_.initializers_.push_back(std::move(info));
    return absl::OkStatus();
  }

  int subgraphCount() const { return static_cast<int>(g_.subgraphs_.size()); }
  // InvalidArgument when a body under `parent` would nest too deep.
  absl::Status CheckNesting(int parent) const;
  // Appends a subgraph; depth is derived from the parent. Returns its index.
  int AddSubgraph(Subgraph s);

  // Appends a default node in `subgraph`; InvalidArgument above max_nodes.
  absl::Status AddNode(int subgraph, NodeId* id);
  void ReserveNodes(std::size_t n) { g_.nodes_.reserve(n); }
  Node& node(NodeId id) { return g_.nodes_[static_cast<std::size_t>(id)]; }
  std::size_t nodeCount() const { return g_.nodes_.size(); }

  // Assigns node ids and builds the indexes.
  // InvalidArgument when a name is longer than GraphOptions::max_name_bytes.
  absl::Status CheckNames() const;
  Graph Finish();

 private:
  absl::string_view origin_;
  const GraphOptions& options_;
  std::size_t list_entries_ = 0;
  Graph g_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_INTERNAL_GRAPH_BUILDER_H_
