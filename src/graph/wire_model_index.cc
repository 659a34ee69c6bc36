#include "graph/wire_model_index.h"

#include <algorithm>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/onnx_fields.h"
#include "graph/wire_reader.h"

namespace semmap {
namespace internal {
namespace {

// The occurrences of one message field, merged as protobuf merges them.
using Spans = absl::InlinedVector<absl::string_view, 1>;


class Indexer {
 public:
  Indexer(absl::string_view file, absl::string_view origin, int max_depth, WireModel* out)
      : file_(file), origin_(origin), max_depth_(max_depth), out_(out) {}

  absl::Status Run() {
    Spans graph;
    WireReader r(file_);
    WireField f;
    while (r.Next(&f)) {
      switch (f.number) {
        case model_field::kIrVersion:
          if (IsVarint(f)) out_->ir_version = f.varint;
          break;
        case model_field::kModelVersion:
          if (IsVarint(f)) out_->model_version = f.varint;
          break;
        case model_field::kProducerName:
          if (IsLen(f)) out_->producer_name = f.bytes;
          break;
        case model_field::kProducerVersion:
          if (IsLen(f)) out_->producer_version = f.bytes;
          break;
        case model_field::kDomain:
          if (IsLen(f)) out_->domain = f.bytes;
          break;
        case model_field::kGraph:
          if (IsLen(f)) graph.push_back(f.bytes);
          break;
        case model_field::kOpsetImport:
          if (IsLen(f)) out_->opset_imports.push_back(f.bytes);
          break;
        case model_field::kFunctions:
          if (IsLen(f)) out_->functions.push_back(f.bytes);
          break;
        default:
          break;
      }
    }
    if (!r.ok()) return Malformed(r, "ModelProto");
    if (std::none_of(graph.begin(), graph.end(), [](absl::string_view g) { return !g.empty(); })) {
      return absl::InvalidArgumentError(absl::StrCat(origin_, ": not an ONNX model (no graph)"));
    }
    return IndexMainGraph(graph);
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
            WireTensor t;
            absl::string_view name;
            SEMMAP_RETURN_IF_ERROR(ReadTensor(Spans{f.bytes}, &name, &t));
            out_->initializers.try_emplace(name, t);
            break;
          }
          case graph_field::kSparseInitializer: {
            Spans values;
            SEMMAP_RETURN_IF_ERROR(FieldSpans(f.bytes, kSparseValues, "SparseTensorProto", &values));
            WireTensor t;
            absl::string_view name;
            SEMMAP_RETURN_IF_ERROR(ReadTensor(values, &name, &t));
            out_->sparse_initializers.try_emplace(name, f.bytes);
            break;
          }
          case graph_field::kValueInfo: {
            WireValueInfo v;
            absl::string_view name;
            SEMMAP_RETURN_IF_ERROR(ReadValueInfo(f.bytes, &name, &v));
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
      if (!r.ok()) return Malformed(r, "GraphProto");
    }
    for (absl::string_view bytes : outputs) {
      WireValueInfo v;
      absl::string_view name;
      SEMMAP_RETURN_IF_ERROR(ReadValueInfo(bytes, &name, &v));
      out_->types[name] = v;
      out_->graph_outputs.insert(name);
    }
    for (absl::string_view bytes : inputs) {
      WireValueInfo v;
      absl::string_view name;
      SEMMAP_RETURN_IF_ERROR(ReadValueInfo(bytes, &name, &v));
      out_->types[name] = v;
    }
    return absl::OkStatus();
  }

  absl::Status IndexNode(absl::string_view bytes, WireNode* node) {
    node->bytes = bytes;
    std::vector<Spans> bodies;
    WireReader r(bytes);
    WireField f;
    while (r.Next(&f)) {
      if (!IsLen(f)) continue;
      switch (f.number) {
        case node_field::kInput:
          node->inputs.push_back(f.bytes);
          break;
        case node_field::kOutput:
          node->outputs.push_back(f.bytes);
          break;
        case node_field::kName:
          node->name = f.bytes;
          break;
        case node_field::kOpType:
          node->op_type = f.bytes;
          break;
        case node_field::kAttribute:
          SEMMAP_RETURN_IF_ERROR(AttributeBodies(f.bytes, &bodies));
          break;
        default:
          break;
      }
    }
    if (!r.ok()) return Malformed(r, "NodeProto");
    for (const Spans& body : bodies) {
      absl::flat_hash_set<absl::string_view> defined;
      std::vector<absl::string_view> used;
      SEMMAP_RETURN_IF_ERROR(CollectDefined(body, 1, &defined));
      SEMMAP_RETURN_IF_ERROR(CollectUsed(body, 1, &used));
      for (absl::string_view u : used) {
        if (!u.empty() && !defined.contains(u)) node->outer_reads.push_back(u);
      }
    }
    return absl::OkStatus();
  }

  // An attribute's bodies, in the order protobuf holds them: g (its
  // occurrences merged), then each of graphs.
  absl::Status AttributeBodies(absl::string_view attribute, std::vector<Spans>* bodies) {
    Spans g, graphs;
    WireReader r(attribute);
    WireField f;
    while (r.Next(&f)) {
      if (!IsLen(f)) continue;
      if (f.number == attribute_field::kG) g.push_back(f.bytes);
      if (f.number == attribute_field::kGraphs) graphs.push_back(f.bytes);
    }
    if (!r.ok()) return Malformed(r, "AttributeProto");
    if (!g.empty()) bodies->push_back(g);
    for (absl::string_view body : graphs) bodies->push_back(Spans{body});
    return absl::OkStatus();
  }

  // Names a body defines: its inputs, initializers, sparse initializers'
  // values, node outputs, and the same inside nested bodies.
  absl::Status CollectDefined(const Spans& graph, int depth,
                              absl::flat_hash_set<absl::string_view>* defined) {
    SEMMAP_RETURN_IF_ERROR(CheckDepth(depth));
    for (absl::string_view span : graph) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (!IsLen(f)) continue;
        absl::string_view name;
        switch (f.number) {
          case graph_field::kInput: {
            WireValueInfo v;
            SEMMAP_RETURN_IF_ERROR(ReadValueInfo(f.bytes, &name, &v));
            defined->insert(name);
            break;
          }
          case graph_field::kInitializer: {
            WireTensor t;
            SEMMAP_RETURN_IF_ERROR(ReadTensor(Spans{f.bytes}, &name, &t));
            defined->insert(name);
            break;
          }
          case graph_field::kSparseInitializer: {
            Spans values;
            SEMMAP_RETURN_IF_ERROR(FieldSpans(f.bytes, kSparseValues, "SparseTensorProto", &values));
            WireTensor t;
            SEMMAP_RETURN_IF_ERROR(ReadTensor(values, &name, &t));
            defined->insert(name);
            break;
          }
          case graph_field::kNode: {
            std::vector<Spans> bodies;
            WireReader n(f.bytes);
            WireField nf;
            while (n.Next(&nf)) {
              if (!IsLen(nf)) continue;
              if (nf.number == node_field::kOutput) defined->insert(nf.bytes);
              if (nf.number == node_field::kAttribute) {
                SEMMAP_RETURN_IF_ERROR(AttributeBodies(nf.bytes, &bodies));
              }
            }
            if (!n.ok()) return Malformed(n, "NodeProto");
            for (const Spans& body : bodies) {
              SEMMAP_RETURN_IF_ERROR(CollectDefined(body, depth + 1, defined));
            }
            break;
          }
          default:
            break;
        }
      }
      if (!r.ok()) return Malformed(r, "GraphProto");
    }
    return absl::OkStatus();
  }

  // Names a body uses: each node's inputs, then what its own bodies use;
  // after all nodes, the body's outputs.
  absl::Status CollectUsed(const Spans& graph, int depth, std::vector<absl::string_view>* used) {
    SEMMAP_RETURN_IF_ERROR(CheckDepth(depth));
    std::vector<absl::string_view> outputs;
    for (absl::string_view span : graph) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (!IsLen(f)) continue;
        if (f.number == graph_field::kOutput) {
          outputs.push_back(f.bytes);
        } else if (f.number == graph_field::kNode) {
          std::vector<Spans> bodies;
          WireReader n(f.bytes);
          WireField nf;
          while (n.Next(&nf)) {
            if (!IsLen(nf)) continue;
            if (nf.number == node_field::kInput) used->push_back(nf.bytes);
            if (nf.number == node_field::kAttribute) {
              SEMMAP_RETURN_IF_ERROR(AttributeBodies(nf.bytes, &bodies));
            }
          }
          if (!n.ok()) return Malformed(n, "NodeProto");
          for (const Spans& body : bodies) {
            SEMMAP_RETURN_IF_ERROR(CollectUsed(body, depth + 1, used));
          }
        }
      }
      if (!r.ok()) return Malformed(r, "GraphProto");
    }
    for (absl::string_view bytes : outputs) {
      WireValueInfo v;
      absl::string_view name;
      SEMMAP_RETURN_IF_ERROR(ReadValueInfo(bytes, &name, &v));
      used->push_back(name);
    }
    return absl::OkStatus();
  }

  absl::Status FieldSpans(absl::string_view message, std::uint32_t number, const char* what,
                          Spans* spans) {
    WireReader r(message);
    WireField f;
    while (r.Next(&f)) {
      if (f.number == number && IsLen(f)) spans->push_back(f.bytes);
    }
    return r.ok() ? absl::OkStatus() : Malformed(r, what);
  }

  absl::Status ReadTensor(const Spans& spans, absl::string_view* name, WireTensor* t) {
    std::int32_t location = 0;
    *name = absl::string_view();
    for (absl::string_view span : spans) {
      t->bytes = span;
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (f.number == tensor_field::kName && IsLen(f)) {
          *name = f.bytes;
        } else if (f.number == tensor_field::kDataLocation && IsVarint(f)) {
          const auto v = static_cast<std::int32_t>(f.varint);
          if (v == 0 || v == tensor_field::kExternal) location = v;
        } else if (f.number == tensor_field::kExternalData && IsLen(f)) {
          absl::string_view key, value;
          WireReader e(f.bytes);
          WireField ef;
          while (e.Next(&ef)) {
            if (ef.number == kEntryKey && IsLen(ef)) key = ef.bytes;
            if (ef.number == kEntryValue && IsLen(ef)) value = ef.bytes;
          }
          if (!e.ok()) return Malformed(e, "StringStringEntryProto");
          if (key == "location") t->location = value;
        }
      }
      if (!r.ok()) return Malformed(r, "TensorProto");
    }
    t->external = location == tensor_field::kExternal;
    return absl::OkStatus();
  }

  absl::Status ReadValueInfo(absl::string_view bytes, absl::string_view* name, WireValueInfo* v) {
    v->bytes = bytes;
    *name = absl::string_view();
    WireReader r(bytes);
    WireField f;
    while (r.Next(&f)) {
      if (f.number == kValueInfoName && IsLen(f)) *name = f.bytes;
      if (f.number == kValueInfoType && IsLen(f)) v->typed = true;
    }
    return r.ok() ? absl::OkStatus() : Malformed(r, "ValueInfoProto");
  }

  absl::Status CheckDepth(int depth) const {
    if (depth > max_depth_) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin_, ": subgraphs nested deeper than ", max_depth_, " levels"));
    }
    return absl::OkStatus();
  }

  absl::Status Malformed(const WireReader& r, const char* message) const {
    return MalformedOnnx(origin_, file_, r, message);
  }

  absl::string_view file_;
  absl::string_view origin_;
  const int max_depth_;
  WireModel* out_;
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
  SEMMAP_RETURN_IF_ERROR(Indexer(bytes, origin, max_subgraph_depth, &model).Run());
  return model;
}

}  // namespace internal
}  // namespace semmap
