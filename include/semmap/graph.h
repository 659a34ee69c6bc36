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
// after the node that owns it, then model-local functions in order). The
// Python corpus tools compute the same key.
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
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace semmap {

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

struct GraphOptions {
  // Files above this size are refused (InvalidArgument).
  std::uint64_t max_file_bytes = std::uint64_t{2} << 30;
  // Subgraphs nested deeper than this are refused (InvalidArgument).
  int max_subgraph_depth = 64;
  // More nodes than this (all subgraphs together) are refused.
  std::size_t max_nodes = 50'000'000;
};

class Graph {
 public:
  // Reads an ONNX model file. Errors (messages start with the file name):
  // NotFound (missing), InvalidArgument (empty, not an ONNX ModelProto,
  // truncated or corrupt protobuf, above a limit of GraphOptions).
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

 private:
  friend class GraphBuilder;
  Graph() = default;

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

  absl::flat_hash_map<std::string, NodeId> by_id_;
  absl::flat_hash_map<std::string, NodeId> by_unique_name_;
  // Keyed by ScopedKey(defining subgraph, value name), see graph.cc.
  absl::flat_hash_map<std::string, NodeId> producer_;
  absl::flat_hash_map<std::string, std::vector<NodeId>> consumers_;
  // Values defined without a producer (inputs, initializers) per subgraph.
  absl::flat_hash_map<std::string, bool> defined_;
  // The subgraph a value used in `subgraph` resolves to, or -1.
  int resolveScope(absl::string_view value, int subgraph) const;
  absl::flat_hash_map<std::string, std::size_t> initializer_index_;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_GRAPH_H_
