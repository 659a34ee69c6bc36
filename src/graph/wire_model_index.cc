#include "graph/wire_model_index.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/onnx_fields.h"
#include "graph/wire_messages.h"
#include "graph/wire_reader.h"

namespace semmap {
namespace internal {
namespace {

class Indexer {
 public:
  Indexer(const WireSource& source, int max_depth, WireModel* out)
      : source_(source), max_depth_(max_depth), out_(out), nodes_(source) {}

  absl::Status Run() {
    ModelFields model;
    SEMMAP_RETURN_IF_ERROR(ReadModel(source_, &model));
    out_->ir_version = model.ir_version;
    out_->model_version = model.model_version;
    out_->producer_name = model.producer_name;
    out_->producer_version = model.producer_version;
    out_->domain = model.domain;
    out_->opset_imports = std::move(model.opset_imports);
    out_->functions = std::move(model.functions);
    if (std::none_of(model.graph.begin(), model.graph.end(),
                     [](absl::string_view g) { return !g.empty(); })) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_.origin, ": not an ONNX model (no graph)"));
    }
    return IndexMainGraph(model.graph);
  }

 private:
  // Long (about 65 lines): one case per GraphProto field extract copies or
  // looks up, then outputs and inputs in the order protobuf's lookups see
  // them.
  absl::Status IndexMainGraph(const Spans& spans) {
    std::vector<absl::string_view> inputs, outputs;
    for (absl::string_view span : spans) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (!IsLen(f)) continue;
        switch (f.number) {
          case graph_field::kNode: {
            out_->nodes.emplace_back();
            SEMMAP_RETURN_IF_ERROR(IndexNode(f.bytes, &out_->nodes.back()));
            break;
          }
          case graph_field::kName:
            out_->graph_name = f.bytes;
            break;
          case graph_field::kInitializer: {
            TensorFields t;
            SEMMAP_RETURN_IF_ERROR(ReadTensor(source_, Spans{f.bytes}, &t, nullptr));
            out_->initializers.try_emplace(t.name, WireTensor{t.bytes, t.external, t.location});
            break;
          }
          case graph_field::kSparseInitializer: {
            Spans values;
            SEMMAP_RETURN_IF_ERROR(ReadSparseValues(source_, f.bytes, &values));
            TensorFields t;
            SEMMAP_RETURN_IF_ERROR(ReadTensor(source_, values, &t, nullptr));
            out_->sparse_initializers.try_emplace(t.name, f.bytes);
            break;
          }
          case graph_field::kValueInfo: {
            WireValueInfo v{f.bytes, false};
            absl::string_view name;
            SEMMAP_RETURN_IF_ERROR(ReadValueInfo(source_, f.bytes, &name, &v.typed));
            out_->types.try_emplace(name, v);
            break;
          }
          case graph_field::kInput:
            inputs.push_back(f.bytes);
            break;
          case graph_field::kOutput:
            outputs.push_back(f.bytes);
            break;
          default:
            break;
        }
      }
      if (!r.ok()) return source_.Malformed(r, "GraphProto");
    }
    for (absl::string_view bytes : outputs) {
      WireValueInfo v{bytes, false};
      absl::string_view name;
      SEMMAP_RETURN_IF_ERROR(ReadValueInfo(source_, bytes, &name, &v.typed));
      out_->types[name] = v;
      out_->graph_outputs.insert(name);
    }
    for (absl::string_view bytes : inputs) {
      WireValueInfo v{bytes, false};
      absl::string_view name;
      SEMMAP_RETURN_IF_ERROR(ReadValueInfo(source_, bytes, &name, &v.typed));
      out_->types[name] = v;
    }
    return absl::OkStatus();
  }

  absl::Status IndexNode(absl::string_view bytes, WireNode* node) {
    node->bytes = bytes;
    NodeFields n;
    bool has_body = false;
    SEMMAP_RETURN_IF_ERROR(nodes_.Read(bytes, NoCharge, &n, &has_body));
    node->name = n.name;
    node->op_type = n.op_type;
    node->inputs.assign(n.inputs.begin(), n.inputs.end());
    node->outputs.assign(n.outputs.begin(), n.outputs.end());
    if (!has_body) return absl::OkStatus();
    return ForEachBody(source_, bytes, [this, node](absl::string_view, const Spans& body) {
      absl::flat_hash_set<absl::string_view> defined;
      std::vector<absl::string_view> used;
      SEMMAP_RETURN_IF_ERROR(CollectNames(body, 1, &defined, &used));
      for (absl::string_view u : used) {
        if (!u.empty() && !defined.contains(u)) node->outer_reads.push_back(u);
      }
      return absl::OkStatus();
    });
  }

  static absl::Status NoCharge(std::size_t) { return absl::OkStatus(); }

  // The names a body defines (its inputs, initializers, sparse
  // initializers' values, node outputs) and uses (each node's inputs, then
  // what its own bodies use; after all nodes, the body's outputs), the
  // same inside nested bodies.
  absl::Status CollectNames(const Spans& graph, int depth,
                            absl::flat_hash_set<absl::string_view>* defined,
                            std::vector<absl::string_view>* used) {
    if (depth > max_depth_) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_.origin, ": subgraphs nested deeper than ", max_depth_, " levels"));
    }
    std::vector<absl::string_view> outputs;
    for (absl::string_view span : graph) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (!IsLen(f)) continue;
        SEMMAP_RETURN_IF_ERROR(CollectField(f, depth, defined, used, &outputs));
      }
      if (!r.ok()) return source_.Malformed(r, "GraphProto");
    }
    for (absl::string_view bytes : outputs) {
      absl::string_view name;
      bool typed;
      SEMMAP_RETURN_IF_ERROR(ReadValueInfo(source_, bytes, &name, &typed));
      used->push_back(name);
    }
    return absl::OkStatus();
  }

  // One GraphProto field of CollectNames.
  absl::Status CollectField(const WireField& f, int depth,
                            absl::flat_hash_set<absl::string_view>* defined,
                            std::vector<absl::string_view>* used,
                            std::vector<absl::string_view>* outputs) {
    absl::string_view name;
    TensorFields t;
    switch (f.number) {
      case graph_field::kInput: {
        bool typed;
        SEMMAP_RETURN_IF_ERROR(ReadValueInfo(source_, f.bytes, &name, &typed));
        defined->insert(name);
        break;
      }
      case graph_field::kInitializer:
        SEMMAP_RETURN_IF_ERROR(ReadTensor(source_, Spans{f.bytes}, &t, nullptr));
        defined->insert(t.name);
        break;
      case graph_field::kSparseInitializer: {
        Spans values;
        SEMMAP_RETURN_IF_ERROR(ReadSparseValues(source_, f.bytes, &values));
        SEMMAP_RETURN_IF_ERROR(ReadTensor(source_, values, &t, nullptr));
        defined->insert(t.name);
        break;
      }
      case graph_field::kOutput:
        outputs->push_back(f.bytes);
        break;
      case graph_field::kNode: {
        NodeFields n;
        bool has_body = false;
        SEMMAP_RETURN_IF_ERROR(nodes_.Read(f.bytes, NoCharge, &n, &has_body));
        defined->insert(n.outputs.begin(), n.outputs.end());
        used->insert(used->end(), n.inputs.begin(), n.inputs.end());
        if (!has_body) break;
        return ForEachBody(source_, f.bytes, [&](absl::string_view, const Spans& body) {
          return CollectNames(body, depth + 1, defined, used);
        });
      }
      default:
        break;
    }
    return absl::OkStatus();
  }

  const WireSource source_;
  const int max_depth_;
  WireModel* out_;
  NodeReader nodes_;
};

}  // namespace

std::vector<absl::string_view> ValuesRead(const WireNode& node) {
  std::vector<absl::string_view> read;
  read.reserve(node.inputs.size() + node.outer_reads.size());
  for (absl::string_view v : node.inputs) {
    if (!v.empty()) read.push_back(v);
  }
  read.insert(read.end(), node.outer_reads.begin(), node.outer_reads.end());
  return read;
}

absl::StatusOr<WireModel> IndexWireModel(absl::string_view bytes, absl::string_view origin,
                                         int max_subgraph_depth) {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected an ONNX model"));
  }
  WireModel model;
  SEMMAP_RETURN_IF_ERROR(Indexer(WireSource{bytes, origin}, max_subgraph_depth, &model).Run());
  return model;
}

}  // namespace internal
}  // namespace semmap
