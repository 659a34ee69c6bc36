#include "semmap/annotate.h"

#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/unknown_field_set.h"
#include "internal/atomic_write.h"
#include "internal/file_io.h"
#include "internal/model_proto.h"
#include "internal/status_macros.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "semmap/tree.h"

namespace semmap {
namespace {

// NodeProto.metadata_props is field 9 since onnx 1.16. Debian's onnx 1.12
// does not know it, so entries live among the unknown fields, as the loader
// (graph.cc) reads them.
constexpr int kNodeMetadataPropsField = 9;
constexpr char kNamespaceKey[] = "namespace";

using NodeVisitor = std::function<absl::Status(onnx::NodeProto*)>;

// Graph's traversal order (graph.h): each node, then the bodies of its
// GRAPH / GRAPHS attributes, recursively; model-local functions last.
absl::Status VisitGraph(onnx::GraphProto* graph, const NodeVisitor& visit);

absl::Status VisitNode(onnx::NodeProto* node, const NodeVisitor& visit) {
  SEMMAP_RETURN_IF_ERROR(visit(node));
  for (onnx::AttributeProto& attr : *node->mutable_attribute()) {
    if (attr.type() == onnx::AttributeProto::GRAPH || attr.has_g()) {
      SEMMAP_RETURN_IF_ERROR(VisitGraph(attr.mutable_g(), visit));
    }
    for (onnx::GraphProto& body : *attr.mutable_graphs()) {
      SEMMAP_RETURN_IF_ERROR(VisitGraph(&body, visit));
    }
  }
  return absl::OkStatus();
}

absl::Status VisitGraph(onnx::GraphProto* graph, const NodeVisitor& visit) {
  for (onnx::NodeProto& node : *graph->mutable_node()) {
    SEMMAP_RETURN_IF_ERROR(VisitNode(&node, visit));
  }
  return absl::OkStatus();
}

absl::Status VisitModel(onnx::ModelProto* model, const NodeVisitor& visit) {
  SEMMAP_RETURN_IF_ERROR(VisitGraph(model->mutable_graph(), visit));
  for (onnx::FunctionProto& fn : *model->mutable_functions()) {
    for (onnx::NodeProto& node : *fn.mutable_node()) {
      SEMMAP_RETURN_IF_ERROR(VisitNode(&node, visit));
    }
  }
  return absl::OkStatus();
}

std::size_t CountExternalTensors(const onnx::GraphProto& graph) {
  std::size_t count = 0;
  for (const auto& t : graph.initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) ++count;
  }
  for (const auto& node : graph.node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) count += CountExternalTensors(attr.g());
      for (const auto& body : attr.graphs()) count += CountExternalTensors(body);
    }
  }
  return count;
}

// Removes metadata entries whose key `drop` selects; reports whether a
// `namespace` entry survives.
bool DropMetadata(onnx::NodeProto* node, const std::function<bool(const std::string&)>& drop) {
  google::protobuf::UnknownFieldSet* fields = node->GetReflection()->MutableUnknownFields(node);
  bool has_namespace = false;
  for (int i = fields->field_count(); i-- > 0;) {
    const google::protobuf::UnknownField& field = fields->field(i);
    if (field.number() != kNodeMetadataPropsField ||
        field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      continue;
    }
    onnx::StringStringEntryProto entry;
    if (!entry.ParseFromString(field.length_delimited())) continue;
    if (drop(entry.key())) {
      fields->DeleteSubrange(i, 1);
    } else if (entry.key() == kNamespaceKey) {
      has_namespace = true;
    }
  }
  return has_namespace;
}

void AddMetadata(onnx::NodeProto* node, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto entry;
  entry.set_key(key);
  entry.set_value(value);
  node->GetReflection()->MutableUnknownFields(node)->AddLengthDelimited(
      kNodeMetadataPropsField, entry.SerializeAsString());
}

std::string ConfidenceText(double confidence) { return absl::StrCat(confidence); }


}  // namespace

std::string NamespaceOf(const SemanticMapper& mapper, NodeId node) {
  const Mapping& m = mapper.moduleFor(node);
  if (!m.mapped()) return "";
  const Manifest& manifest = mapper.manifest();
  std::vector<ModuleId> chain;
  for (ModuleId id = m.module; id != kNoModule; id = manifest.module(id).parent) {
    chain.push_back(id);
  }
  auto class_of = [](const ModuleInfo& info) -> absl::string_view {
    return info.qualified_class.empty() ? absl::string_view("unknown")
                                        : absl::string_view(info.qualified_class);
  };
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const ModuleInfo& info = manifest.module(*it);
    absl::StrAppend(&out, out.empty() ? "" : "/", info.path, ": ", class_of(info));
  }
  // The node itself closes the namespace, as in the dynamo exporter; its
  // scoped name holds '/', so only the last part is used.
  const Node& n = mapper.graph().node(node);
  absl::string_view leaf = n.name;
  leaf = leaf.substr(leaf.rfind('/') == absl::string_view::npos ? 0 : leaf.rfind('/') + 1);
  if (leaf.empty()) leaf = n.op_type;
  absl::StrAppend(&out, "/", leaf, ": ", QualifiedOpType(n));
  return out;
}

absl::StatusOr<AnnotateResult> Annotate(const SemanticMapper& mapper, const std::string& input,
                                        const std::string& output,
                                        const AnnotateOptions& options) {
  // Refuse early, before reading anything, so a bad invocation is cheap.
  SEMMAP_RETURN_IF_ERROR(
      internal::CheckOutputFor(output, {{input, "the input model"}}, options.allow_overwrite));
  SEMMAP_ASSIGN_OR_RETURN(onnx::ModelProto model,
                          internal::LoadModelProto(input, options.max_file_bytes,
                                                   options.max_subgraph_depth));
  if (onnx::NodeProto::descriptor()->FindFieldByNumber(kNodeMetadataPropsField) != nullptr) {
    // A newer onnx parses field 9 itself; writing unknown fields would
    // duplicate entries. Graph would need the same change.
    return absl::UnimplementedError(absl::StrCat(
        input, ": this onnx build knows NodeProto.metadata_props; semmap writes it as an "
               "unknown field"));
  }

  const Graph& graph = mapper.graph();
  AnnotateResult result;
  result.external_tensors = CountExternalTensors(model.graph());
  NodeId next = 0;
  const NodeVisitor annotate_node = [&](onnx::NodeProto* node) -> absl::Status {
    if (static_cast<std::size_t>(next) >= graph.size() || graph.node(next).name != node->name() ||
        graph.node(next).op_type != node->op_type()) {
      return absl::FailedPreconditionError(absl::StrCat(
          input, ": node ", next, " (\"", internal::Abbreviate(node->name()),
          "\") differs from the graph that was mapped; was the file changed?"));
    }
    const Mapping& m = mapper.moduleFor(next);
    const bool write_namespace = options.write_namespace && m.mapped();
    const bool has_namespace = DropMetadata(node, [&](const std::string& key) {
      return absl::StartsWith(key, "semmap.") ||
             (write_namespace && options.overwrite_namespace && key == kNamespaceKey);
    });
    // namespace before semmap.*: a second run keeps the namespace where it
    // is and re-appends semmap.*, giving the same bytes (idempotence).
    if (has_namespace) {
      ++result.namespaces_kept;
    } else if (write_namespace) {
      AddMetadata(node, kNamespaceKey, NamespaceOf(mapper, next));
      ++result.namespaces_written;
    }
    AddMetadata(node, "semmap.module", std::string(m.module_path));
    AddMetadata(node, "semmap.class", std::string(m.qualified_class));
    AddMetadata(node, "semmap.confidence", ConfidenceText(m.confidence));
    AddMetadata(node, "semmap.strategy", std::string(StrategyName(m.strategy)));
    if (!m.category.empty()) AddMetadata(node, "semmap.category", std::string(m.category));
    if (options.doc_string_json) {
      nlohmann::json doc = {{"semmap",
                             {{"module", std::string(m.module_path)},
                              {"class", std::string(m.qualified_class)},
                              {"confidence", m.confidence},
                              {"strategy", std::string(StrategyName(m.strategy))}}}};
      // Module paths may come from non-UTF-8 node names: replace, never throw.
      node->set_doc_string(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    result.mapped += m.mapped() ? 1 : 0;
    ++next;
    return absl::OkStatus();
  };
  SEMMAP_RETURN_IF_ERROR(VisitModel(&model, annotate_node));
  if (static_cast<std::size_t>(next) != graph.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": has ", next, " nodes but the mapped graph has ", graph.size(),
        "; was the file changed?"));
  }
  result.nodes = static_cast<std::size_t>(next);

  std::string out_bytes;
  if (!model.SerializeToString(&out_bytes)) {
    return absl::InternalError(absl::StrCat(output, ": cannot serialize the annotated model"));
  }
  SEMMAP_RETURN_IF_ERROR(internal::WriteFileAtomically(output, out_bytes));
  result.bytes_written = out_bytes.size();
  return result;
}

}  // namespace semmap
