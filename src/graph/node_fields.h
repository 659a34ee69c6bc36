// NodeFields: single fields of a Graph's nodes, read straight from their
// compact records (graph_rep.h), for the library's passes over every node.
//
// Graph::node() assembles all twelve fields of a public Node behind a call
// into the library; a pass over a million nodes that needs a node's op type
// or its inputs pays that for every node, and the profile of the mapping
// shows it. These inline reads touch only the record and the field asked
// for. They give exactly what the matching Node field holds.
//
//   const NodeFields nodes(graph);
//   for (NodeId i = 0; i < nodes.size(); ++i) {
//     if (nodes.opType(i) == "Shape") ...
//   }
//
// A view of the Graph's representation: valid while the Graph, or any copy
// of it, lives; cheap to make and to copy; safe to share between threads.
#ifndef SEMMAP_SRC_GRAPH_NODE_FIELDS_H_
#define SEMMAP_SRC_GRAPH_NODE_FIELDS_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph_rep.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

class NodeFields {
 public:
  explicit NodeFields(const Graph& graph) : rep_(&GraphAccess::Rep(graph)) {}

  std::size_t size() const { return rep_->nodes.size(); }

  absl::string_view name(NodeId id) const { return rep_->record(id).nameView(); }
  absl::string_view opType(NodeId id) const { return rep_->interned[rep_->record(id).op_type]; }
  // A number per distinct op type (and domain) string of the graph, below
  // opTypeCount(): equal exactly when the op types are equal, so a pass can
  // keep per-type answers in an array.
  std::uint32_t opTypeIndex(NodeId id) const { return rep_->record(id).op_type; }
  std::size_t opTypeCount() const { return rep_->interned.size(); }
  int subgraph(NodeId id) const { return rep_->record(id).subgraph; }

  absl::Span<const absl::string_view> inputs(NodeId id) const {
    const NodeRecord& r = rep_->record(id);
    return absl::MakeConstSpan(rep_->node_strings.data() + r.strings, r.inputs);
  }
  absl::Span<const absl::string_view> outputs(NodeId id) const {
    const NodeRecord& r = rep_->record(id);
    return absl::MakeConstSpan(rep_->node_strings.data() + r.strings + r.inputs, r.outputs);
  }
  absl::Span<const ValueId> inputValues(NodeId id) const {
    const NodeRecord& r = rep_->record(id);
    return absl::MakeConstSpan(rep_->node_values.data() + r.strings, r.inputs);
  }
  absl::Span<const ValueId> outputValues(NodeId id) const {
    const NodeRecord& r = rep_->record(id);
    return absl::MakeConstSpan(rep_->node_values.data() + r.strings + r.inputs, r.outputs);
  }
  absl::Span<const MetadataEntry> metadata(NodeId id) const {
    const NodeRecord& r = rep_->record(id);
    return absl::MakeConstSpan(rep_->node_metadata.data() + r.metadata, r.metadata_count);
  }

  // Graph::producer and Graph::initializerOf without the call.
  NodeId producer(ValueId v) const {
    return v < 0 ? kNoNode : rep_->value_producer[static_cast<std::size_t>(v)];
  }
  bool isInitializer(ValueId v) const {
    return v >= 0 && rep_->value_initializer[static_cast<std::size_t>(v)] >= 0;
  }

 private:
  const GraphRep* rep_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_NODE_FIELDS_H_
