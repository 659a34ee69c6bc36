#include "semmap/graph.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/unknown_field_set.h"
#include "internal/file_io.h"
#include "internal/status_macros.h"
#include "onnx/onnx_pb.h"

namespace semmap {
namespace {

// NodeProto.metadata_props is field 9 since onnx 1.16; Debian's onnx 1.12
// keeps it among the unknown fields, so it is read from there.
constexpr int kNodeMetadataPropsField = 9;

std::string ScopedKey(int subgraph, absl::string_view value) {
  if (subgraph == 0) return std::string(value);
  return absl::StrCat(subgraph, "\x1f", value);
}

}  // namespace

// Turns a parsed ModelProto into a Graph. Lives here so no protobuf type is
// named in the public header.
class GraphBuilder {
 public:
  GraphBuilder(Graph* g, absl::string_view origin, const GraphOptions& options)
      : g_(g), origin_(origin), options_(options) {}

  absl::Status Build(const onnx::ModelProto& model) {
    g_->ir_version_ = model.ir_version();
    g_->producer_name_ = model.producer_name();
    g_->producer_version_ = model.producer_version();
    for (const auto& op : model.opset_import()) {
      if (op.domain().empty() || op.domain() == "ai.onnx") g_->opset_ = op.version();
    }
    for (const auto& kv : model.metadata_props()) {
      g_->model_metadata_.emplace_back(kv.key(), kv.value());
    }
    Subgraph main;
    main.name = model.graph().name();
    g_->subgraphs_.push_back(main);
    for (const auto& v : model.graph().input()) g_->inputs_.push_back(v.name());
    for (const auto& v : model.graph().output()) g_->outputs_.push_back(v.name());
    SEMMAP_RETURN_IF_ERROR(AddGraph(model.graph(), 0));
    for (const auto& fn : model.functions()) {
      Subgraph s;
      s.kind = Subgraph::Kind::kFunction;
      s.name = fn.name();
      s.domain = fn.domain();
      const int index = static_cast<int>(g_->subgraphs_.size());
      g_->subgraphs_.push_back(s);
      for (const auto& in : fn.input()) defined_.emplace(ScopedKey(index, in), true);
      for (const auto& node : fn.node()) SEMMAP_RETURN_IF_ERROR(AddNode(node, index));
    }
    AssignIds();
    IndexValues();
    return absl::OkStatus();
  }

 private:
  absl::Status AddGraph(const onnx::GraphProto& graph, int index) {
    for (const auto& t : graph.initializer()) AddInitializer(t, index);
    for (const auto& st : graph.sparse_initializer()) AddInitializer(st.values(), index);
    for (const auto& v : graph.input()) g_->defined_.emplace(ScopedKey(index, v.name()), true);
    for (const auto& node : graph.node()) SEMMAP_RETURN_IF_ERROR(AddNode(node, index));
    return absl::OkStatus();
  }

  void AddInitializer(const onnx::TensorProto& t, int index) {
    TensorInfo info;
    info.name = t.name();
    info.elem_type = t.data_type();
    info.dims.assign(t.dims().begin(), t.dims().end());
    info.external = t.data_location() == onnx::TensorProto::EXTERNAL;
    info.subgraph = index;
    g_->defined_.emplace(ScopedKey(index, info.name), true);
    if (index == 0) g_->initializer_index_.emplace(info.name, g_->initializers_.size());
    g_->initializers_.push_back(std::move(info));
  }

  absl::Status AddNode(const onnx::NodeProto& proto, int subgraph) {
    if (g_->nodes_.size() >= options_.max_nodes) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin_, ": more than ", options_.max_nodes, " nodes (GraphOptions::max_nodes)"));
    }
    const NodeId id = static_cast<NodeId>(g_->nodes_.size());
    g_->nodes_.emplace_back();
    Node& n = g_->nodes_.back();
    n.name = proto.name();
    n.op_type = proto.op_type();
    n.domain = proto.domain();
    n.inputs.assign(proto.input().begin(), proto.input().end());
    n.outputs.assign(proto.output().begin(), proto.output().end());
    n.doc_string = proto.doc_string();
    n.subgraph = subgraph;
    ReadMetadata(proto, &n.metadata);
    for (const auto& attr : proto.attribute()) {
      n.attribute_names.push_back(attr.name());
    }
    // Descend right after the owning node, in attribute order.
    for (const auto& attr : proto.attribute()) {
      if (attr.type() == onnx::AttributeProto::GRAPH || attr.has_g()) {
        SEMMAP_RETURN_IF_ERROR(AddSubgraph(attr.g(), id, attr.name(), subgraph));
      }
      for (const auto& body : attr.graphs()) {
        SEMMAP_RETURN_IF_ERROR(AddSubgraph(body, id, attr.name(), subgraph));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddSubgraph(const onnx::GraphProto& graph, NodeId owner,
                           const std::string& attribute, int parent) {
    Subgraph s;
    s.kind = Subgraph::Kind::kAttribute;
    s.name = graph.name();
    s.owner = owner;
    s.attribute = attribute;
    s.parent = parent;
    s.depth = g_->subgraphs_[parent].depth + 1;
    if (s.depth > options_.max_subgraph_depth) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin_, ": subgraphs nested deeper than ", options_.max_subgraph_depth,
          " levels (GraphOptions::max_subgraph_depth)"));
    }
    const int index = static_cast<int>(g_->subgraphs_.size());
    g_->subgraphs_.push_back(std::move(s));
    return AddGraph(graph, index);
  }

  static void ReadMetadata(const onnx::NodeProto& proto,
                           std::vector<std::pair<std::string, std::string>>* out) {
    const auto& unknown = proto.GetReflection()->GetUnknownFields(proto);
    for (int i = 0; i < unknown.field_count(); ++i) {
      const auto& field = unknown.field(i);
      if (field.number() != kNodeMetadataPropsField ||
          field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
        continue;
      }
      onnx::StringStringEntryProto entry;
      if (entry.ParseFromString(field.length_delimited())) {
        out->emplace_back(entry.key(), entry.value());
      }
    }
  }

  void AssignIds() {
    absl::flat_hash_map<absl::string_view, int> counts;
    for (const Node& n : g_->nodes_) ++counts[n.name];
    for (std::size_t i = 0; i < g_->nodes_.size(); ++i) {
      Node& n = g_->nodes_[i];
      const bool unique = !n.name.empty() && counts[n.name] == 1;
      n.id = unique ? n.name : absl::StrCat(n.name, "#", i);
      if (unique) g_->by_unique_name_.emplace(n.name, static_cast<NodeId>(i));
      g_->by_id_.emplace(n.id, static_cast<NodeId>(i));
    }
  }

  void IndexValues() {
    for (std::size_t i = 0; i < g_->nodes_.size(); ++i) {
      const Node& n = g_->nodes_[i];
      for (const std::string& out : n.outputs) {
        if (!out.empty()) g_->producer_.emplace(ScopedKey(n.subgraph, out), static_cast<NodeId>(i));
      }
    }
    for (std::size_t i = 0; i < g_->nodes_.size(); ++i) {
      const Node& n = g_->nodes_[i];
      absl::flat_hash_set<std::string> seen;
      for (const std::string& in : n.inputs) {
        if (in.empty()) continue;
        const int scope = g_->resolveScope(in, n.subgraph);
        if (scope < 0) continue;
        std::string key = ScopedKey(scope, in);
        if (!seen.insert(key).second) continue;
        g_->consumers_[key].push_back(static_cast<NodeId>(i));
        // An outer value used inside a subgraph is consumed by every owner
        // between the use and the definition.
        for (int s = n.subgraph; s != scope && s > 0;) {
          const Subgraph& sub = g_->subgraphs_[s];
          if (sub.kind != Subgraph::Kind::kAttribute) break;
          auto& list = g_->consumers_[key];
          if (list.empty() || list.back() != sub.owner) list.push_back(sub.owner);
          s = sub.parent;
        }
      }
    }
    for (auto& entry : g_->consumers_) {
      auto& list = entry.second;
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
  }

  Graph* g_;
  absl::string_view origin_;
  const GraphOptions& options_;
  absl::flat_hash_map<std::string, bool>& defined_ = g_->defined_;
};

int Graph::resolveScope(absl::string_view value, int subgraph) const {
  for (int s = subgraph; s >= 0 && s < static_cast<int>(subgraphs_.size());) {
    const std::string key = ScopedKey(s, value);
    if (producer_.contains(key) || defined_.contains(key)) return s;
    if (subgraphs_[s].kind != Subgraph::Kind::kAttribute) break;
    s = subgraphs_[s].parent;
  }
  return -1;
}

absl::StatusOr<Graph> Graph::Load(const std::string& path, const GraphOptions& options) {
  SEMMAP_ASSIGN_OR_RETURN(std::string bytes, internal::ReadFile(path, options.max_file_bytes));
  return Parse(bytes, path, options);
}

absl::StatusOr<Graph> Graph::Parse(absl::string_view bytes, absl::string_view origin,
                                   const GraphOptions& options) {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected an ONNX model"));
  }
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": ", bytes.size(), " bytes is above protobuf's 2 GB message limit"));
  }
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(INT_MAX);
  // Each subgraph level costs three message levels (Graph, Node, Attribute).
  stream.SetRecursionLimit(options.max_subgraph_depth * 3 + 16);
  if (!model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": not a valid ONNX model (protobuf parse failed: truncated, corrupt, "
                "nested too deep, or not an ONNX file)"));
  }
  if (!model.has_graph() || model.ir_version() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": not an ONNX model (", model.has_graph() ? "no ir_version" : "no graph",
        "; is this a different protobuf message?)"));
  }
  Graph g;
  GraphBuilder builder(&g, origin, options);
  SEMMAP_RETURN_IF_ERROR(builder.Build(model));
  return g;
}

NodeId Graph::find(absl::string_view id_or_name) const {
  auto it = by_id_.find(id_or_name);
  if (it != by_id_.end()) return it->second;
  auto by_name = by_unique_name_.find(id_or_name);
  return by_name == by_unique_name_.end() ? kNoNode : by_name->second;
}

NodeId Graph::producer(absl::string_view value, int subgraph) const {
  const int scope = resolveScope(value, subgraph);
  if (scope < 0) return kNoNode;
  auto it = producer_.find(ScopedKey(scope, value));
  return it == producer_.end() ? kNoNode : it->second;
}

absl::Span<const NodeId> Graph::consumers(absl::string_view value, int subgraph) const {
  const int scope = resolveScope(value, subgraph);
  if (scope < 0) return {};
  auto it = consumers_.find(ScopedKey(scope, value));
  if (it == consumers_.end()) return {};
  return it->second;
}

const TensorInfo* Graph::initializer(absl::string_view name) const {
  auto it = initializer_index_.find(name);
  return it == initializer_index_.end() ? nullptr : &initializers_[it->second];
}

}  // namespace semmap
