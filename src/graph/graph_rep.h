// GraphRep: what a Graph holds (include/semmap/graph.h keeps only a pointer
// to it, so the storage can change without touching the public header).
// Written once by GraphBuilder, then immutable and shared by every copy of
// the Graph; lookups may run on any number of threads.
//
// A node is a 56-byte NodeRecord rather than a semmap::Node (180 bytes of
// views and spans): its name is a pointer and a 32-bit length, its op type
// and domain indexes into a table of distinct strings, its lists 32-bit
// offsets and counts into the flat arrays node_strings / node_values /
// node_metadata. Graph::node() assembles the public Node on access
// (MakeNode). At 1M nodes that is 56 MB instead of 180 MB, and the passes
// over the nodes while loading read a third as much.
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
#include "base/uninit_vector.h"
#include "io/mapped_file.h"
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

// One node. Lengths, offsets and counts are 32-bit: GraphBuilder::AddNode
// refuses a name of 2^32 bytes or more and a node taking the flat arrays
// past 2^32 - 1 entries (both far above GraphOptions' defaults).
struct NodeRecord {
  const char* name = nullptr;  // into the backing or GraphRep::owned
  std::uint32_t name_size = 0;
  // Index into GraphRep::generated_ids, or -1: the id is the name.
  std::int32_t id = -1;
  // Indexes into GraphRep::interned. 32 bits: a hostile file may have a
  // distinct op type per node.
  std::uint32_t op_type = 0;
  std::uint32_t domain = 0;
  // node_strings[strings ..) holds the inputs, then the outputs, then the
  // attribute names; node_values is parallel to it.
  std::uint32_t strings = 0;
  std::uint32_t inputs = 0;
  std::uint32_t outputs = 0;
  std::uint32_t attributes = 0;
  std::uint32_t metadata = 0;  // node_metadata[metadata .. + metadata_count)
  std::uint32_t metadata_count = 0;
  std::uint32_t doc_string = 0;  // index into GraphRep::doc_strings; 0 is ""
  std::int32_t subgraph = 0;

  absl::string_view nameView() const { return absl::string_view(name, name_size); }
};
// The memory figures of docs/performance.md count on this.
static_assert(sizeof(NodeRecord) <= 56, "NodeRecord grew");

struct GraphRep {
  // What the views below point into: the mapped file or a copy of the
  // bytes, and strings the loader had to copy or make (generated ids).
  std::shared_ptr<const void> backing;
  std::deque<std::string> owned;
  // The mapping of the file the wire scan read, when Graph::Load mapped
  // one (`backing` owns it).
  const MappedFile* source_file = nullptr;

  // Sized before the records are written (a parallel walk writes them in
  // place, GraphBuilder::BatchNodes): UninitVector leaves them unwritten.
  UninitVector<NodeRecord> nodes;
  // Op types and domains, each distinct string once (index 0 is "").
  std::vector<absl::string_view> interned;
  // Ids of the nodes whose id is not their name ("<name>#<index>").
  std::vector<absl::string_view> generated_ids;
  // Non-empty doc strings of nodes; index 0 is "".
  std::vector<absl::string_view> doc_strings;

  std::vector<Subgraph> subgraphs;
  std::vector<TensorInfo> initializers;
  std::vector<absl::string_view> inputs;
  std::vector<absl::string_view> outputs;
  std::int64_t ir_version = 0;
  std::int64_t opset = 0;
  absl::string_view producer_name;
  absl::string_view producer_version;
  std::vector<MetadataEntry> model_metadata;
  absl::string_view graph_doc_string;  // the main graph's, the last one written
  // Values defined without a producer other than initializers: graph
  // inputs of every subgraph and function inputs, with their subgraph.
  std::vector<std::pair<int, absl::string_view>> defined_values;

  // Storage of the nodes' lists and the initializers' dims.
  UninitVector<absl::string_view> node_strings;  // sized, then filled
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

  const NodeRecord& record(NodeId id) const { return nodes[static_cast<std::size_t>(id)]; }
  absl::string_view nodeId(NodeId id) const {
    const NodeRecord& r = record(id);
    return r.id < 0 ? r.nameView() : generated_ids[static_cast<std::size_t>(r.id)];
  }
};

// The names of the keys of GraphRep's two name tables, from a slot's index
// (name_table.h's `name_of`): by_id maps a node's id, whose erased slot (a
// repeated name) gives the name of the node that first had it; values a
// value's name.
struct IdKeys {
  const GraphRep& rep;
  absl::string_view operator()(std::int32_t index) const {
    return index >= 0 ? rep.nodeId(index) : rep.record(ErasedKey(index)).nameView();
  }
};
struct ValueKeys {
  const GraphRep& rep;
  absl::string_view operator()(std::int32_t index) const {
    return rep.value_names[static_cast<std::size_t>(index)];
  }
};

// The public view of node `id` (graph.h's Node).
Node MakeNode(const GraphRep& rep, NodeId id);

// The library's way into a Graph's representation.
struct GraphAccess {
  static const GraphRep& Rep(const Graph& graph) { return *graph.rep_; }
  // Graph::Parse of bytes the Graph takes over instead of copying them (a
  // large buffer the caller no longer needs: one copy alive, not two).
  static absl::StatusOr<Graph> ParseOwned(std::string bytes, absl::string_view origin,
                                          const GraphOptions& options);
};

// The mapping of the file `graph` was loaded from, when the wire scan read
// it from the file `path` names now (same device and inode), else null:
// a writer that copies from the model reads the bytes the Graph was built
// from instead of reading the file again. Valid while `graph` lives.
const MappedFile* GraphSource(const Graph& graph, const std::string& path);

// The value `value` names as used in `subgraph` (ONNX scoping), or
// kNoValue; `*scope` is set to the defining subgraph. `hash` is
// NameHash(value).
ValueId ResolveValue(const GraphRep& rep, absl::string_view value, std::uint64_t hash,
                     int subgraph, int* scope);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_GRAPH_REP_H_
