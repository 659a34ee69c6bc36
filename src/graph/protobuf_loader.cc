#include "graph/protobuf_loader.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "google/protobuf/unknown_field_set.h"
#include "graph/model_proto.h"
#include "onnx/onnx_pb.h"

namespace semmap {
namespace internal {
namespace {

// NodeProto.metadata_props is field 9 since onnx 1.16; Debian's onnx 1.12
// keeps it among the unknown fields, so it is read from there.
constexpr int kNodeMetadataPropsField = 9;

class ProtoWalker {
 public:
  ProtoWalker(GraphBuilder* b) : b_(b) {}

  absl::Status Walk(const onnx::ModelProto& model) {
    std::int64_t opset = 0;
    for (const auto& op : model.opset_import()) {
      if (op.domain().empty() || op.domain() == "ai.onnx") opset = op.version();
    }
    b_->SetModelInfo(model.ir_version(), model.producer_name(), model.producer_version(), opset);
    for (const auto& kv : model.metadata_props()) b_->AddModelMetadata(kv.key(), kv.value());
    if (!model.graph().doc_string().empty()) b_->SetGraphDocString(model.graph().doc_string());
    Subgraph main;
    main.name = model.graph().name();
    b_->AddSubgraph(main);
    SEMMAP_RETURN_IF_ERROR(b_->Charge(static_cast<std::size_t>(model.metadata_props_size())));
    for (const auto& v : model.graph().input()) SEMMAP_RETURN_IF_ERROR(b_->AddMainInput(v.name()));
    for (const auto& v : model.graph().output()) SEMMAP_RETURN_IF_ERROR(b_->AddMainOutput(v.name()));
    SEMMAP_RETURN_IF_ERROR(AddGraph(model.graph(), 0));
    for (const auto& fn : model.functions()) {
      Subgraph s;
      s.kind = Subgraph::Kind::kFunction;
      s.name = fn.name();
      s.domain = fn.domain();
      const int index = b_->AddSubgraph(s);
      for (const auto& in : fn.input()) SEMMAP_RETURN_IF_ERROR(b_->DefineValue(index, in));
      for (const auto& node : fn.node()) SEMMAP_RETURN_IF_ERROR(AddNode(node, index));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status AddGraph(const onnx::GraphProto& graph, int index) {
    for (const auto& t : graph.initializer()) SEMMAP_RETURN_IF_ERROR(AddInitializer(t, index));
    for (const auto& st : graph.sparse_initializer()) {
      SEMMAP_RETURN_IF_ERROR(AddInitializer(st.values(), index));
    }
    for (const auto& v : graph.input()) SEMMAP_RETURN_IF_ERROR(b_->DefineValue(index, v.name()));
    for (const auto& node : graph.node()) SEMMAP_RETURN_IF_ERROR(AddNode(node, index));
    return absl::OkStatus();
  }

  absl::Status AddInitializer(const onnx::TensorProto& t, int index) {
    return b_->AddInitializer(t.name(), t.data_type(),
                              absl::MakeConstSpan(t.dims().data(), t.dims().size()),
                              t.data_location() == onnx::TensorProto::EXTERNAL, index);
  }

  absl::Status AddNode(const onnx::NodeProto& proto, int subgraph) {
    SEMMAP_RETURN_IF_ERROR(b_->Charge(static_cast<std::size_t>(
        proto.input_size() + proto.output_size() + proto.attribute_size())));
    std::vector<absl::string_view> inputs(proto.input().begin(), proto.input().end());
    std::vector<absl::string_view> outputs(proto.output().begin(), proto.output().end());
    std::vector<absl::string_view> attributes;
    attributes.reserve(static_cast<std::size_t>(proto.attribute_size()));
    for (const auto& attr : proto.attribute()) attributes.push_back(attr.name());
    std::vector<onnx::StringStringEntryProto> entries = ReadMetadata(proto);
    SEMMAP_RETURN_IF_ERROR(b_->Charge(entries.size()));
    std::vector<MetadataEntry> metadata;
    metadata.reserve(entries.size());
    for (const auto& e : entries) metadata.emplace_back(e.key(), e.value());
    NodeFields n;
    n.name = proto.name();
    n.op_type = proto.op_type();
    n.domain = proto.domain();
    n.doc_string = proto.doc_string();
    n.inputs = inputs;
    n.outputs = outputs;
    n.attribute_names = attributes;
    n.metadata = metadata;
    NodeId id;
    SEMMAP_RETURN_IF_ERROR(b_->AddNode(subgraph, n, &id));
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
    SEMMAP_RETURN_IF_ERROR(b_->CheckNesting(parent));
    Subgraph s;
    s.kind = Subgraph::Kind::kAttribute;
    s.name = graph.name();
    s.owner = owner;
    s.attribute = attribute;
    s.parent = parent;
    return AddGraph(graph, b_->AddSubgraph(s));
  }

  static std::vector<onnx::StringStringEntryProto> ReadMetadata(const onnx::NodeProto& proto) {
    std::vector<onnx::StringStringEntryProto> out;
    const auto& unknown = proto.GetReflection()->GetUnknownFields(proto);
    for (int i = 0; i < unknown.field_count(); ++i) {
      const auto& field = unknown.field(i);
      if (field.number() != kNodeMetadataPropsField ||
          field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
        continue;
      }
      onnx::StringStringEntryProto entry;
      if (entry.ParseFromString(field.length_delimited())) out.push_back(std::move(entry));
    }
    return out;
  }

  GraphBuilder* b_;
};

}  // namespace

absl::Status LoadWithProtobuf(absl::string_view bytes, absl::string_view origin,
                              const GraphOptions& options, GraphBuilder* builder) {
  onnx::ModelProto model;
  SEMMAP_RETURN_IF_ERROR(ParseModelProto(bytes, origin, options.max_subgraph_depth, &model));
  // An empty GraphProto (zero bytes) is no graph: nothing in it to map.
  const bool has_graph = model.has_graph() && model.graph().ByteSizeLong() > 0;
  if (!has_graph || model.ir_version() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": not an ONNX model (", has_graph ? "no ir_version" : "no graph",
        "; is this a different protobuf message?)"));
  }
  for (const auto& op : model.opset_import()) {
    if (op.version() < 0) return OpsetOutOfRange(origin, op.version());
  }
  return ProtoWalker(builder).Walk(model);
}

}  // namespace internal
}  // namespace semmap
