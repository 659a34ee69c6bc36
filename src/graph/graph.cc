#include "semmap/graph.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/name_table.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "graph/graph_builder.h"
#include "graph/graph_rep.h"
#include "graph/protobuf_loader.h"
#include "graph/wire_loader.h"
#include "io/file_io.h"
#include "io/mapped_file.h"

namespace semmap {

bool operator==(const Node& a, const Node& b) {
  return a.id == b.id && a.name == b.name && a.op_type == b.op_type && a.domain == b.domain &&
         a.inputs == b.inputs && a.outputs == b.outputs &&
         a.attribute_names == b.attribute_names && a.metadata == b.metadata &&
         a.input_values == b.input_values && a.output_values == b.output_values &&
         a.doc_string == b.doc_string && a.subgraph == b.subgraph;
}

bool operator==(const Subgraph& a, const Subgraph& b) {
  return a.kind == b.kind && a.name == b.name && a.owner == b.owner &&
         a.attribute == b.attribute && a.domain == b.domain && a.parent == b.parent &&
         a.depth == b.depth;
}

bool operator==(const TensorInfo& a, const TensorInfo& b) {
  return a.name == b.name && a.elem_type == b.elem_type && a.dims == b.dims &&
         a.external == b.external && a.subgraph == b.subgraph;
}

namespace internal {

Node MakeNode(const GraphRep& rep, NodeId id) {
  const NodeRecord& r = rep.record(id);
  const absl::string_view* s = rep.node_strings.data() + r.strings;
  const ValueId* v = rep.node_values.data() + r.strings;
  Node n;
  n.name = r.nameView();
  n.id = r.id < 0 ? n.name : rep.generated_ids[static_cast<std::size_t>(r.id)];
  n.op_type = rep.interned[r.op_type];
  n.domain = rep.interned[r.domain];
  n.inputs = absl::MakeConstSpan(s, r.inputs);
  n.input_values = absl::MakeConstSpan(v, r.inputs);
  n.outputs = absl::MakeConstSpan(s + r.inputs, r.outputs);
  n.output_values = absl::MakeConstSpan(v + r.inputs, r.outputs);
  n.attribute_names = absl::MakeConstSpan(s + r.inputs + r.outputs, r.attributes);
  n.metadata = absl::MakeConstSpan(rep.node_metadata.data() + r.metadata, r.metadata_count);
  n.doc_string = rep.doc_strings[r.doc_string];
  n.subgraph = r.subgraph;
  return n;
}

ValueId ResolveValue(const GraphRep& rep, absl::string_view value, std::uint64_t hash,
                     int subgraph, int* scope) {
  const absl::Span<const NameSlot> table(rep.values);
  for (int s = subgraph; s >= 0 && s < static_cast<int>(rep.subgraphs.size());) {
    const NameSlot* slot = FindName(table, ScopedHash(hash, s), s, value, ValueKeys{rep});
    if (slot != nullptr) {
      *scope = s;
      return slot->index;
    }
    if (rep.subgraphs[static_cast<std::size_t>(s)].kind != Subgraph::Kind::kAttribute) break;
    s = rep.subgraphs[static_cast<std::size_t>(s)].parent;
  }
  return kNoValue;
}

const MappedFile* GraphSource(const Graph& graph, const std::string& path) {
  const MappedFile* file = GraphAccess::Rep(graph).source_file;
  return file != nullptr && file->IsFile(path) ? file : nullptr;
}

}  // namespace internal

Node internal::NodeAt(const internal::GraphRep* rep, std::ptrdiff_t index) {
  return internal::MakeNode(*rep, static_cast<NodeId>(index));
}

absl::StatusOr<Graph> Graph::Load(const std::string& path, const GraphOptions& options) try {
  if (options.loader == Loader::kProtobuf) {
    // Refuse what protobuf cannot parse before reading it into memory.
    const std::uint64_t limit = std::min<std::uint64_t>(options.max_file_bytes, INT_MAX);
    SEMMAP_ASSIGN_OR_RETURN(std::string bytes, internal::ReadFile(path, limit));
    return Parse(bytes, path, options);
  }
  SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile mapped,
                          internal::MappedFile::Open(path, options.max_file_bytes));
  // The Graph keeps the mapping (and its SIGBUS guard): its strings point
  // into it.
  auto file = std::make_shared<const internal::MappedFile>(std::move(mapped));
  absl::StatusOr<Graph> graph = Build(file->bytes(), path, options, file, file.get());
  if (file->truncated()) {
    // What was parsed held zeros where the file's end used to be.
    return absl::DataLossError(absl::StrCat(
        path, ": the file shrank while it was read (truncated by another process?)"));
  }
  return graph;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(path, "loading the model");
} catch (const std::length_error&) {
  return internal::OutOfMemory(path, "loading the model");
}

absl::StatusOr<Graph> Graph::Parse(absl::string_view bytes, absl::string_view origin,
                                   const GraphOptions& options) try {
  if (options.loader == Loader::kProtobuf) return Build(bytes, origin, options, nullptr);
  // The wire scan keeps views into the bytes: the Graph owns a copy.
  auto copy = std::make_shared<const std::string>(bytes.data(), bytes.size());
  return Build(*copy, origin, options, copy);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the model");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the model");
}

absl::StatusOr<Graph> internal::GraphAccess::ParseOwned(std::string bytes,
                                                       absl::string_view origin,
                                                       const GraphOptions& options) try {
  if (options.loader == Loader::kProtobuf) return Graph::Build(bytes, origin, options, nullptr);
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  return Graph::Build(*owned, origin, options, owned);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the model");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the model");
}

absl::StatusOr<Graph> Graph::Build(absl::string_view bytes, absl::string_view origin,
                                   const GraphOptions& options,
                                   std::shared_ptr<const void> backing,
                                   const internal::MappedFile* file) try {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected an ONNX model"));
  }
  const bool durable = options.loader != Loader::kProtobuf;
  internal::GraphBuilder builder(origin, options, std::move(backing), durable);
  if (durable) builder.SetSourceFile(file);
  if (options.loader == Loader::kProtobuf) {
    SEMMAP_RETURN_IF_ERROR(internal::LoadWithProtobuf(bytes, origin, options, &builder));
  } else {
    SEMMAP_RETURN_IF_ERROR(internal::LoadWithWireScan(bytes, origin, options, &builder));
  }
  return builder.Finish();
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the model");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the model");
}

NodeList Graph::nodes() const { return NodeList(rep_.get(), rep_->nodes.size()); }
Node Graph::node(NodeId id) const { return internal::MakeNode(*rep_, id); }
std::size_t Graph::size() const { return rep_->nodes.size(); }
const std::vector<Subgraph>& Graph::subgraphs() const { return rep_->subgraphs; }

NodeId Graph::find(absl::string_view id_or_name) const {
  // A name that is unique in the model is its node's id, so one lookup
  // answers both.
  const internal::NameSlot* slot = internal::FindName(
      absl::Span<const internal::NameSlot>(rep_->by_id),
      internal::ScopedHash(internal::NameHash(id_or_name), 0), 0, id_or_name,
      internal::IdKeys{*rep_});
  return slot == nullptr || slot->index < 0 ? kNoNode : slot->index;
}

ValueId Graph::value(absl::string_view name, int subgraph) const {
  int scope;
  return internal::ResolveValue(*rep_, name, internal::NameHash(name), subgraph, &scope);
}

std::size_t Graph::valueCount() const { return rep_->value_producer.size(); }

absl::string_view Graph::valueName(ValueId v) const {
  return rep_->value_names[static_cast<std::size_t>(v)];
}

NodeId Graph::producer(ValueId v) const {
  return v < 0 ? kNoNode : rep_->value_producer[static_cast<std::size_t>(v)];
}

absl::Span<const NodeId> Graph::consumers(ValueId v) const {
  if (v < 0) return {};
  const std::uint32_t b = rep_->consumer_offsets[static_cast<std::size_t>(v)];
  const std::uint32_t e = rep_->consumer_offsets[static_cast<std::size_t>(v) + 1];
  return absl::Span<const NodeId>(rep_->consumer_nodes.data() + b, e - b);
}

const TensorInfo* Graph::initializer(absl::string_view name) const {
  auto it = rep_->initializer_index.find(name);
  return it == rep_->initializer_index.end() ? nullptr : &rep_->initializers[it->second];
}

const TensorInfo* Graph::initializerOf(ValueId v) const {
  if (v < 0) return nullptr;
  const std::int32_t t = rep_->value_initializer[static_cast<std::size_t>(v)];
  return t < 0 ? nullptr : &rep_->initializers[static_cast<std::size_t>(t)];
}

const std::vector<TensorInfo>& Graph::initializers() const { return rep_->initializers; }
const std::vector<absl::string_view>& Graph::inputs() const { return rep_->inputs; }
const std::vector<absl::string_view>& Graph::outputs() const { return rep_->outputs; }
std::int64_t Graph::irVersion() const { return rep_->ir_version; }
std::int64_t Graph::opset() const { return rep_->opset; }
absl::string_view Graph::producerName() const { return rep_->producer_name; }
absl::string_view Graph::producerVersion() const { return rep_->producer_version; }
const std::vector<MetadataEntry>& Graph::modelMetadata() const { return rep_->model_metadata; }

absl::string_view Graph::graphDocString() const { return rep_->graph_doc_string; }

}  // namespace semmap
