// Graph: semmap's read-only view of an ONNX model.
//
// Holds what mapping needs and nothing else: nodes (name, op type, domain,
// inputs, outputs, attribute names, metadata_props, doc_string), graph inputs
// and outputs, initializer names/types/shapes (never their payloads), and
// producer/consumer indexes by value name. Nodes of subgraphs (If/Loop/Scan
// bodies) and of model-local functions are included, each tagged with the
// subgraph it lives in.
//
//   absl::StatusOr<semmap::Graph> g = semmap::Graph::Load("model.onnx");
//   if (!g.ok()) { std::cerr << g.status() << "\n"; return 2; }
//   for (const semmap::Node& n : g->nodes()) std::cout << n.id << "\n";
//
// Node ids. Every node gets a key that is unique in the model: its name when
// the name is non-empty and occurs once in the whole model, otherwise
// "<name>#<index>", index being the node's position in the traversal order
// (main graph in order, descending into each GRAPH/GRAPHS attribute right
// after the node that owns it, then model-local functions in order). Should
// that string be another node's unique name, '#' is appended until it is
// not. The Python corpus tools compute the same key.
//
// A Graph is immutable after loading and safe to share between threads.
// No protobuf type appears here: the loader can change without touching users.
#ifndef SEMMAP_INCLUDE_SEMMAP_GRAPH_H_
#define SEMMAP_INCLUDE_SEMMAP_GRAPH_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace semmap {
namespace internal {
class GraphBuilder;
}  // namespace internal

// Index of a node in Graph::nodes().
using NodeId = std::int32_t;
inline constexpr NodeId kNoNode = -1;

struct Node {
  std::string id;  // unique key, see above
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::vector<std::string> attribute_names;
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props
  std::string doc_string;
  int subgraph = 0;  // index into Graph::subgraphs(); 0 is the main graph
};

// A graph body: the main graph (index 0), a subgraph held by a node
// attribute, or a model-local function.
struct Subgraph {
  enum class Kind { kMain, kAttribute, kFunction };
  Kind kind = Kind::kMain;
  std::string name;
  NodeId owner = kNoNode;   // for kAttribute: the node holding it
  std::string attribute;    // for kAttribute: "then_branch", "body", ...
  std::string domain;       // for kFunction
  int parent = -1;          // enclosing subgraph; -1 for main and functions
  int depth = 0;            // nesting depth; 0 for main and functions
};

struct TensorInfo {
  std::string name;
  std::int32_t elem_type = 0;  // onnx TensorProto.DataType value
  std::vector<std::int64_t> dims;  // empty when unknown or scalar
  bool external = false;  // payload lives in an external data file
  int subgraph = 0;
};

// How Graph::Load and Graph::Parse read the file.
enum class Loader {
  // Walks the protobuf wire format over a read-only memory mapping and reads
  // only the fields above: tensor payloads are skipped by length (their
  // pages are never touched), external-data files are never opened, and
  // files above 2 GB load. Default; gives the same Graph as kProtobuf.
  kWireScan,
  // Parses the whole ModelProto with protobuf (payloads included). Refuses
  // files above 2 GB (protobuf's message limit).
  kProtobuf,
};

struct GraphOptions {
  // Files above this size are refused (InvalidArgument).
  std::uint64_t max_file_bytes = std::uint64_t{1} << 40;
  // Subgraphs nested deeper than this are refused (InvalidArgument).
  int max_subgraph_depth = 64;
  // More nodes than this (all subgraphs together) are refused.
  std::size_t max_nodes = 10'000'000;
  // A node name, op type or value name longer than this is refused
  // (InvalidArgument naming the node). Parsing a name is linear and its
  // scope keeps at most ScopePath::kDefaultMaxSegments segments, so this
  // only bounds memory.
  std::size_t max_name_bytes = std::size_t{16} << 20;
  // Entries of all lists together: node inputs, outputs, attribute names
  // and metadata_props, graph and function inputs and outputs,
  // initializers and their dims, model metadata_props. Each costs a few
  // bytes in the file and tens in memory, so this bounds memory whatever
  // the file size (docs/robustness.md).
  std::size_t max_list_entries = 50'000'000;
  Loader loader = Loader::kWireScan;
};

class Graph {
 public:
  // Reads an ONNX model file. Errors (messages start with the file name):
  // NotFound (missing), InvalidArgument (empty, not an ONNX ModelProto,
  // truncated or corrupt protobuf, above a limit of GraphOptions). The wire
  // scan names the byte offset of the malformed field; it checks the
  // structure of every message it reads but only the lengths of those it
  // skips (tensor payloads, value types), so it accepts some files whose
  // skipped parts protobuf would reject.
  static absl::StatusOr<Graph> Load(const std::string& path,
                                    const GraphOptions& options = {});
  // Same, from the serialized bytes; `origin` names the source in messages.
  static absl::StatusOr<Graph> Parse(absl::string_view bytes,
                                     absl::string_view origin,
                                     const GraphOptions& options = {});

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  std::size_t size() const { return nodes_.size(); }
  const std::vector<Subgraph>& subgraphs() const { return subgraphs_; }

  // Node by id (see above), or by name when the name is unique; kNoNode
  // otherwise.
  NodeId find(absl::string_view id_or_name) const;

  // Value names are resolved as ONNX scoping does: a name used in
  // `subgraph` refers to the definition in that subgraph or the nearest
  // enclosing one. Function bodies are scopes of their own.
  //
  // The node producing `value` as seen from `subgraph`, or kNoNode for graph
  // inputs, initializers and unknown names.
  NodeId producer(absl::string_view value, int subgraph = 0) const;
  // Nodes consuming that same value, in node order. A node whose subgraph
  // body uses an outer value counts as a consumer too.
  absl::Span<const NodeId> consumers(absl::string_view value,
                                     int subgraph = 0) const;

  // Initializer by name (sparse initializers included), or nullptr.
  const TensorInfo* initializer(absl::string_view name) const;
  const std::vector<TensorInfo>& initializers() const { return initializers_; }
  const std::vector<std::string>& inputs() const { return inputs_; }
  const std::vector<std::string>& outputs() const { return outputs_; }

  std::int64_t ir_version() const { return ir_version_; }
  std::int64_t opset() const { return opset_; }  // default domain
  const std::string& producer_name() const { return producer_name_; }
  const std::string& producer_version() const { return producer_version_; }
  const std::vector<std::pair<std::string, std::string>>& model_metadata() const {
    return model_metadata_;
  }

 // Copies rebuild the indexes (they point into the copied strings).
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;
  ~Graph() = default;

 private:
  friend class internal::GraphBuilder;
  Graph() = default;

  // A value or initializer name as seen in one subgraph. The view points
  // into a string owned by this Graph (node outputs, initializers_,
  // defined_values_), whose buffers do not move once loading has finished.
  struct ScopedName {
    int scope;
    absl::string_view name;
    friend bool operator==(const ScopedName& a, const ScopedName& b) {
      return a.scope == b.scope && a.name == b.name;
    }
    template <typename H>
    friend H AbslHashValue(H h, const ScopedName& k) {
      return H::combine(std::move(h), k.scope, k.name);
    }
  };

  // Builds every index below from nodes_, subgraphs_, initializers_ and
  // defined_values_; ids must be assigned. by_id_ is kept when filled.
  void BuildIndexes();
  // The index in values_ of `value` as used in `subgraph` (ONNX scoping),
  // or -1; `*scope` is set to the defining subgraph.
  std::int64_t resolve(absl::string_view value, int subgraph, int* scope) const;

  std::vector<Node> nodes_;
  std::vector<Subgraph> subgraphs_;
  std::vector<TensorInfo> initializers_;
  std::vector<std::string> inputs_;
  std::vector<std::string> outputs_;
  std::int64_t ir_version_ = 0;
  std::int64_t opset_ = 0;
  std::string producer_name_;
  std::string producer_version_;
  std::vector<std::pair<std::string, std::string>> model_metadata_;
  // Values defined without a producer other than initializers: graph inputs
  // of every subgraph and function inputs, with the subgraph defining them.
  std::vector<std::pair<int, std::string>> defined_values_;

  absl::flat_hash_map<absl::string_view, NodeId> by_id_;
  // Every value defined in a scope: produced by a node, a graph or function
  // input, or an initializer. Index into value_producer_ (kNoNode when not
  // produced) and into consumer_offsets_: the consumers of value v are
  // consumer_nodes_[consumer_offsets_[v] .. consumer_offsets_[v + 1]).
  absl::flat_hash_map<ScopedName, std::uint32_t> values_;
  std::vector<NodeId> value_producer_;
  std::vector<std::uint32_t> consumer_offsets_;
  std::vector<NodeId> consumer_nodes_;
  absl::flat_hash_map<absl::string_view, std::size_t> initializer_index_;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_GRAPH_H_
