// GraphRep: what a Graph holds (include/semmap/graph.h keeps only a pointer
// to it, so the storage can change without touching the public header).
// Written once by GraphBuilder, then immutable and shared by every copy of
// the Graph; lookups may run on any number of threads.
#ifndef SEMMAP_SRC_GRAPH_GRAPH_REP_H_
#define SEMMAP_SRC_GRAPH_GRAPH_REP_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "base/name_table.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

// A slot of the open-addressing tables of GraphRep (src/base/name_table.h):
// a key in `scope` (0 in by_id), the high bits of its hash, and what it
// maps to (a NodeId or ValueId, which gives the key's name; negative for a
// free or erased slot).
struct NameSlot {
  std::uint32_t tag = 0;
  std::int32_t scope = 0;
  std::int32_t index = -1;
};

struct GraphRep {
  // What the views below point into: the mapped file or a copy of the
  // bytes, and strings the loader had to copy or make (generated ids).
  std::shared_ptr<const void> backing;
  std::deque<std::string> owned;

  std::vector<Node> nodes;
  std::vector<Subgraph> subgraphs;
  std::vector<TensorInfo> initializers;
  std::vector<absl::string_view> inputs;
  std::vector<absl::string_view> outputs;
  std::int64_t ir_version = 0;
  std::int64_t opset = 0;
  absl::string_view producer_name;
  absl::string_view producer_version;
  std::vector<MetadataEntry> model_metadata;
  // Values defined without a producer other than initializers: graph
  // inputs of every subgraph and function inputs, with their subgraph.
  std::vector<std::pair<int, absl::string_view>> defined_values;

  // Storage of the nodes' spans and the initializers' dims.
  std::vector<absl::string_view> node_strings;
  std::vector<MetadataEntry> node_metadata;
  std::vector<ValueId> node_values;  // parallel to node_strings
  std::vector<std::int64_t> dims;

  // Node by id.
  std::vector<NameSlot> by_id;
  // Every value defined in a scope: its id (`values`, by scope and name),
  // name, producer (kNoNode when not produced); the consumers of v are
  // consumer_nodes[consumer_offsets[v] .. consumer_offsets[v + 1]).
  std::vector<NameSlot> values;
  std::vector<absl::string_view> value_names;
  std::vector<NodeId> value_producer;
  std::vector<std::int32_t> value_initializer;  // index into initializers, or -1
  std::vector<std::uint32_t> consumer_offsets;
  std::vector<NodeId> consumer_nodes;
  absl::flat_hash_map<absl::string_view, std::size_t> initializer_index;

  const Node& node(NodeId id) const { return nodes[static_cast<std::size_t>(id)]; }
};

// The names of the keys of GraphRep's two name tables, from a slot's index
// (name_table.h's `name_of`): by_id maps a node's id, whose erased slot (a
// repeated name) gives the name of the node that first had it; values a
// value's name.
struct IdKeys {
  const GraphRep& rep;
  absl::string_view operator()(std::int32_t index) const {
    return index >= 0 ? rep.node(index).id : rep.node(ErasedKey(index)).name;
  }
};
struct ValueKeys {
  const GraphRep& rep;
  absl::string_view operator()(std::int32_t index) const {
    return rep.value_names[static_cast<std::size_t>(index)];
  }
};

// The value `value` names as used in `subgraph` (ONNX scoping), or
// kNoValue; `*scope` is set to the defining subgraph. `hash` is
// NameHash(value).
ValueId ResolveValue(const GraphRep& rep, absl::string_view value, std::uint64_t hash,
                     int subgraph, int* scope);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_GRAPH_REP_H_
