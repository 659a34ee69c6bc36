// Graph: semmap's read-only view of an ONNX model.
//
// Holds what mapping needs and nothing else: nodes (name, op type, domain,
// inputs, outputs, attribute names, metadata_props, doc_string), graph inputs
// and outputs, initializer names/types/shapes (never their payloads), and
// producer/consumer indexes by value (ValueId, resolved once when loading;
// by name too). Strings are views into the file, which the Graph keeps
// mapped: loading allocates per list, not per name. Nodes of subgraphs (If/Loop/Scan
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
// No protobuf type appears here, nor how the Graph stores what it holds
// (a private representation behind a shared pointer): the loader and the
// storage can change without touching users.
#ifndef SEMMAP_INCLUDE_SEMMAP_GRAPH_H_
#define SEMMAP_INCLUDE_SEMMAP_GRAPH_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/export.h"
#include "semmap/indexed_list.h"

namespace semmap {
namespace internal {
class GraphBuilder;
class MappedFile;
struct GraphAccess;
struct GraphRep;
}  // namespace internal

// Index of a node in Graph::nodes().
using NodeId = std::int32_t;
inline constexpr NodeId kNoNode = -1;

// Index of a value (a name as defined in one scope: a node output, a graph
// or function input, an initializer); see Graph::valueName().
using ValueId = std::int32_t;
inline constexpr ValueId kNoValue = -1;

// One metadata_props entry: key, value.
using MetadataEntry = std::pair<absl::string_view, absl::string_view>;

// Every string and span of a Node, Subgraph or TensorInfo points into
// memory the Graph owns (the mapped file or its own storage): valid as long
// as the Graph, or any copy of it, lives. Copy what must outlive it.
//
// A Node is a view assembled on access: the Graph stores each node as a
// compact record (a third of a Node's size: its name as a pointer and a
// length, op type and domain as indexes into a table of distinct strings,
// its lists as offsets and counts into flat arrays), and Graph::node() and
// nodes() fill a Node from it. Taking a Node allocates nothing but is not
// free: keep the fields a loop needs rather than asking for the node again.
// Nodes are returned by value, so a Node's address says nothing about the
// Graph; its views stay valid after the Node itself is gone.
struct SEMMAP_EXPORT Node {
  absl::string_view id;  // unique key, see above
  absl::string_view name;
  absl::string_view op_type;
  absl::string_view domain;  // "" for the default ONNX domain
  absl::Span<const absl::string_view> inputs;  // "" marks an omitted optional input
  absl::Span<const absl::string_view> outputs;
  absl::Span<const absl::string_view> attribute_names;
  absl::Span<const MetadataEntry> metadata;  // metadata_props
  // The value each input and output names, parallel to `inputs` and
  // `outputs`: resolved as ONNX scoping does (see Graph::producer).
  // kNoValue for "" and for names defined nowhere.
  absl::Span<const ValueId> input_values;
  absl::Span<const ValueId> output_values;
  absl::string_view doc_string;
  int subgraph = 0;  // index into Graph::subgraphs(); 0 is the main graph

  // Field by field, by content (ids of values included).
  friend bool operator==(const Node& a, const Node& b);
  friend bool operator!=(const Node& a, const Node& b) { return !(a == b); }
};

namespace internal {
// Node `index` of `rep`, assembled from its record (Graph::node()).
SEMMAP_EXPORT Node NodeAt(const GraphRep* rep, std::ptrdiff_t index);
}  // namespace internal

// The nodes of a Graph as a random-access range of Nodes made on access
// (indexed_list.h): valid while the Graph, or any copy of it, lives; they
// hold no reference to the Graph object itself.
using NodeList = IndexedList<internal::GraphRep, Node, &internal::NodeAt>;

// A graph body: the main graph (index 0), a subgraph held by a node
// attribute, or a model-local function.
struct SEMMAP_EXPORT Subgraph {
  enum class Kind { kMain, kAttribute, kFunction };
  Kind kind = Kind::kMain;
  absl::string_view name;
  NodeId owner = kNoNode;        // for kAttribute: the node holding it
  absl::string_view attribute;   // for kAttribute: "then_branch", "body", ...
  absl::string_view domain;      // for kFunction
  int parent = -1;               // enclosing subgraph; -1 for main and functions
  int depth = 0;                 // nesting depth; 0 for main and functions

  friend bool operator==(const Subgraph& a, const Subgraph& b);
  friend bool operator!=(const Subgraph& a, const Subgraph& b) { return !(a == b); }
};

struct SEMMAP_EXPORT TensorInfo {
  absl::string_view name;
  std::int32_t elem_type = 0;  // onnx TensorProto.DataType value
  absl::Span<const std::int64_t> dims;  // empty when unknown or scalar
  bool external = false;  // payload lives in an external data file
  int subgraph = 0;

  friend bool operator==(const TensorInfo& a, const TensorInfo& b);
  friend bool operator!=(const TensorInfo& a, const TensorInfo& b) { return !(a == b); }
};

// The number of elements of a tensor of shape `dims` (1 for a scalar), or
// -1 when a dimension is negative (unknown) or the count overflows.
inline std::int64_t ElementCount(absl::Span<const std::int64_t> dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || (d != 0 && n > INT64_MAX / d)) return -1;
    n *= d;
  }
  return n;
}

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

struct SEMMAP_EXPORT GraphOptions {
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

class SEMMAP_EXPORT Graph {
 public:
  // Reads an ONNX model file. Errors (messages start with the file name):
  // NotFound (missing), InvalidArgument (empty, not an ONNX ModelProto,
  // truncated or corrupt protobuf, above a limit of GraphOptions). The wire
  // scan names the byte offset of the malformed field; it checks the
  // structure of every message it reads but only the lengths of those it
  // skips (tensor payloads, value types), so it accepts some files whose
  // skipped parts protobuf would reject.
  //
  // With the wire scan the Graph keeps the file mapped and its strings
  // point into the mapping: loading allocates nothing per node name. A main
  // graph of 64k nodes or more is walked on every core (std::thread); the
  // Graph is the same whatever the number of threads.
  static absl::StatusOr<Graph> Load(const std::string& path,
                                    const GraphOptions& options = {});
  // Same, from the serialized bytes (copied: the Graph does not refer to
  // `bytes` after returning); `origin` names the source in messages.
  static absl::StatusOr<Graph> Parse(absl::string_view bytes,
                                     absl::string_view origin,
                                     const GraphOptions& options = {});

  // Every node, in traversal order (see above); node(id) is nodes()[id].
  NodeList nodes() const;
  Node node(NodeId id) const;
  std::size_t size() const;
  const std::vector<Subgraph>& subgraphs() const;

  // Node by id (see above), or by name when the name is unique; kNoNode
  // otherwise.
  NodeId find(absl::string_view id_or_name) const;

  // Value names are resolved as ONNX scoping does: a name used in
  // `subgraph` refers to the definition in that subgraph or the nearest
  // enclosing one. Function bodies are scopes of their own.
  //
  // The value `name` refers to as seen from `subgraph`, or kNoValue.
  ValueId value(absl::string_view name, int subgraph = 0) const;
  std::size_t valueCount() const;
  absl::string_view valueName(ValueId v) const;
  // The node producing `v`, or kNoNode for graph inputs and initializers.
  NodeId producer(ValueId v) const;
  // Nodes consuming `v`, in node order. A node whose subgraph body uses an
  // outer value counts as a consumer too.
  absl::Span<const NodeId> consumers(ValueId v) const;
  // By name: the same as producer(value(name, subgraph)) and
  // consumers(value(name, subgraph)).
  NodeId producer(absl::string_view value, int subgraph = 0) const {
    return producer(this->value(value, subgraph));
  }
  absl::Span<const NodeId> consumers(absl::string_view value, int subgraph = 0) const {
    return consumers(this->value(value, subgraph));
  }

  // Initializer by name (sparse initializers included), or nullptr.
  const TensorInfo* initializer(absl::string_view name) const;
  // The initializer defining `v` (in any subgraph), or nullptr.
  const TensorInfo* initializerOf(ValueId v) const;
  const std::vector<TensorInfo>& initializers() const;
  const std::vector<absl::string_view>& inputs() const;
  const std::vector<absl::string_view>& outputs() const;

  std::int64_t irVersion() const;
  std::int64_t opset() const;  // default domain
  absl::string_view producerName() const;
  absl::string_view producerVersion() const;
  const std::vector<MetadataEntry>& modelMetadata() const;
  // The main graph's doc_string ("" when it has none). Tools that rebuild
  // the ModelProto and drop its metadata_props keep it; the provenance
  // record's second copy lives there (provenance.h).
  absl::string_view graphDocString() const;

  // A Graph is a handle to immutable data: copies share it (O(1)), and the
  // strings and spans it hands out stay valid while any copy lives.
  Graph(const Graph&) = default;
  Graph& operator=(const Graph&) = default;
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;
  ~Graph() = default;

 private:
  friend class internal::GraphBuilder;
  friend struct internal::GraphAccess;

  explicit Graph(std::shared_ptr<const internal::GraphRep> rep) : rep_(std::move(rep)) {}
  // Loads `bytes`, whose memory `backing` keeps alive (null for the
  // protobuf loader, which copies what it keeps); `file` is the mapping
  // `bytes` views, when read by Load.
  static absl::StatusOr<Graph> Build(absl::string_view bytes, absl::string_view origin,
                                     const GraphOptions& options,
                                     std::shared_ptr<const void> backing,
                                     const internal::MappedFile* file = nullptr);

  // Defined in src/graph/graph_rep.h, private to the library.
  std::shared_ptr<const internal::GraphRep> rep_;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_GRAPH_H_
