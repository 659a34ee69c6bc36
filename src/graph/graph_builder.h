// GraphBuilder: assembles a Graph from whichever loader read the file
// (protobuf_loader, wire_loader). Loaders call it in the traversal order of
// graph.h; it enforces GraphOptions' limits, stores each node as a compact
// record (graph_rep.h) with its lists in a few flat arrays, assigns node ids
// and builds the indexes, so every loader gives the same Graph for the same
// model.
//
// Strings handed to the builder are kept as views when the loader reads
// bytes the Graph will own (`durable`: the wire scan over the mapped file),
// and copied into the Graph otherwise (the protobuf loader, whose message
// dies after loading).
#ifndef SEMMAP_SRC_GRAPH_GRAPH_BUILDER_H_
#define SEMMAP_SRC_GRAPH_GRAPH_BUILDER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/uninit_vector.h"
#include "graph/graph_rep.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

struct ConsumerShare;  // graph_indexes.cc

// InvalidArgument for an opset_import version out of range (a varint above
// INT64_MAX reads as negative); both loaders refuse it alike.
absl::Status OpsetOutOfRange(absl::string_view origin, std::int64_t version);

// What a loader read of one NodeProto.
struct NodeFields {
  absl::string_view name;
  absl::string_view op_type;
  absl::string_view domain;
  absl::string_view doc_string;
  absl::Span<const absl::string_view> inputs;
  absl::Span<const absl::string_view> outputs;
  absl::Span<const absl::string_view> attribute_names;
  absl::Span<const MetadataEntry> metadata;
};

// The longest of a node's name, op type and value names, checked against
// GraphOptions::max_name_bytes (and the 32 bits a record keeps).
std::size_t LongestNodeName(const NodeFields& f);

// Nodes read by one worker of a parallel wire walk (wire_loader.cc), stored
// as a GraphBuilder would store them but with offsets local to the batch:
// `strings`, `metadata` and `doc_strings` (1 + index; 0 is "") count from
// the batch's first entry, op types and domains index `interned`. The node
// records themselves are written in place (GraphBuilder::BatchNodes).
// GraphBuilder::AppendBatches lays the batches out in order, so the Graph is
// the one a serial walk builds, whatever the number of workers.
//
// The lists are sized up front (Reserve), so that they never grow by copying
// (the copy, and the zeroing of each fresh page, were most of a walk's
// memory traffic): the first batch for the whole graph, as its lists become
// the graph's, the others for their own nodes.
struct NodeBatch {
  NodeRecord* nodes = nullptr;  // this batch's records, in the builder's array
  std::size_t count = 0;        // records written
  UninitVector<absl::string_view> strings;
  std::vector<MetadataEntry> metadata;
  std::vector<absl::string_view> doc_strings;
  std::vector<absl::string_view> interned{absl::string_view()};  // [0] is ""
  absl::flat_hash_map<absl::string_view, std::uint32_t> interned_index;
  std::size_t entries = 0;  // list entries charged
  std::size_t inputs = 0, outputs = 0;
  // NameHash of each record's name and of each entry of `strings`, taken
  // while the bytes are at hand (GraphBuilder's index build reads them).
  UninitVector<std::uint64_t> name_hashes, string_hashes;

  // Stores node `f` of `subgraph` in record nodes[count]. False when a name
  // is longer than `max_name` (the serial walk then reports it).
  bool Add(int subgraph, const NodeFields& f, std::size_t max_name);
  // Room for the lists of `nodes_in_all` nodes, at the rate of the nodes
  // added so far plus an eighth, and at most `max_entries` list entries.
  // Only an estimate: a list that needs more grows as a vector does, and
  // memory refused for it is not an error (nothing is reserved then).
  void Reserve(std::size_t nodes_in_all, std::size_t max_entries);

 private:
  std::uint32_t Intern(absl::string_view s);
};

class GraphBuilder {
 public:
  // `backing` is kept alive by the Graph; with `durable`, every string
  // given to the builder must point into it.
  GraphBuilder(absl::string_view origin, const GraphOptions& options,
               std::shared_ptr<const void> backing, bool durable);

  // The mapped file a durable builder's views point into (GraphSource).
  void SetSourceFile(const MappedFile* file) { rep_->source_file = file; }
  void SetModelInfo(std::int64_t ir_version, absl::string_view producer_name,
                    absl::string_view producer_version, std::int64_t opset);
  void AddModelMetadata(absl::string_view key, absl::string_view value);
  void SetGraphDocString(absl::string_view text);
  // Counts `n` more list entries against GraphOptions::max_list_entries:
  // call it before storing them. InvalidArgument above the limit.
  absl::Status Charge(std::size_t n);

  // The main graph's own inputs and outputs (Graph::inputs(), outputs()).
  absl::Status AddMainInput(absl::string_view name);
  absl::Status AddMainOutput(absl::string_view name);
  // A value defined without a producer in `subgraph` (graph or function input).
  absl::Status DefineValue(int subgraph, absl::string_view name);
  // Charged one entry and one per dim.
  absl::Status AddInitializer(absl::string_view name, std::int32_t elem_type,
                              absl::Span<const std::int64_t> dims, bool external, int subgraph);

  int subgraphCount() const { return static_cast<int>(rep_->subgraphs.size()); }
  // InvalidArgument when a body under `parent` would nest too deep.
  absl::Status CheckNesting(int parent) const;
  // Appends a subgraph; depth is derived from the parent. Returns its index.
  int AddSubgraph(Subgraph s);

  // Appends a node in `subgraph` (its lists must have been charged).
  // InvalidArgument above max_nodes, or when a name, op type or value name
  // is longer than GraphOptions::max_name_bytes.
  absl::Status AddNode(int subgraph, const NodeFields& fields, NodeId* id);
  void ReserveNodes(std::size_t n);
  std::size_t nodeCount() const { return rep_->nodes.size(); }

  // For a parallel walk of `n` nodes (durable builders only): room for
  // their records after the nodes so far, left unwritten for the walk's
  // workers to write (and so to touch first), or null when `n` nodes would
  // pass GraphOptions::max_nodes. DropBatchNodes gives the room back.
  NodeRecord* BatchNodes(std::size_t n);
  void DropBatchNodes(std::size_t n);
  // The limit a batch checks names against.
  std::size_t maxNameBytes() const;
  // Appends the nodes of `batches`, in order, as AddNode would have one by
  // one: the first batch's lists are taken whole when the builder has none
  // yet, then `workers` threads copy the others' lists into place and fix
  // up the records. Takes the batches' lists. False, with nothing
  // appended, when a limit would be passed (the serial walk then reports
  // it); the records' room must then be dropped.
  bool AppendBatches(std::vector<NodeBatch>* batches, std::size_t workers);

  // Lays out the spans, assigns node ids and builds the indexes.
  Graph Finish();

 private:
  absl::string_view Keep(absl::string_view s);
  // The index of `s` in GraphRep::interned, adding it (kept) when new.
  std::uint32_t Intern(absl::string_view s);
  // Node ids (a unique name, else "<name>#<index>") and the by-id index.
  void AssignIds();
  // The ids (AssignIds), the value tables (a ValueId per scoped name, its
  // producer and initializer) and the consumers of each value
  // (IndexConsumers). The value table's longest part, the nodes' outputs,
  // runs beside the ids, the initializers' hashes and their index by name;
  // the initializers and inputs are defined after.
  void BuildIndexes();
  // Defines `name` in `scope` (`hash` its ScopedHash) when not defined
  // before (the first definition wins); its ValueId.
  ValueId AddValue(int scope, absl::string_view name, std::uint64_t hash, NodeId producer);
  // The values the nodes' outputs define, in node order.
  void DefineOutputValues();
  // Then those the initializers define, then graph and function inputs.
  void DefineOtherValues();
  // initializer_hashes_, from the initializers' names and subgraphs.
  void HashInitializers();
  // The main graph's initializers by name (GraphRep::initializer_index).
  void IndexInitializers();
  void IndexConsumers();
  // The input ids of share's nodes (node_values), and how many consumers
  // they give each value.
  void ResolveInputs(ConsumerShare* share);
  // Share's consumers into its places of each value's list.
  void FillConsumers(ConsumerShare* share);
  // Fills name_hashes_ and string_hashes_ from the names.
  void HashNames();

  absl::string_view origin_;
  const GraphOptions& options_;
  const bool durable_;
  std::size_t list_entries_ = 0;
  // Node inputs and outputs so far, all nodes together.
  std::size_t inputs_ = 0, outputs_ = 0;
  std::shared_ptr<GraphRep> rep_;
  // NameHash of each node's name and of each entry of GraphRep::node_strings,
  // taken as the nodes are added (on the walk's threads for a parallel walk,
  // while the names' bytes are in cache) and dropped once the indexes are
  // built. A path that left them short is hashed again (HashNames).
  UninitVector<std::uint64_t> name_hashes_, string_hashes_;
  // ScopedHash of each initializer's name, while the indexes are built.
  std::vector<std::uint64_t> initializer_hashes_;
  // Index of each string of GraphRep::interned, while loading.
  absl::flat_hash_map<absl::string_view, std::uint32_t> interned_index_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_GRAPH_BUILDER_H_
