#include "graph/wire_loader.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/onnx_fields.h"
#include "graph/wire_reader.h"

namespace semmap {
namespace internal {
namespace {


// The occurrences of one singular message field: protobuf merges them, which
// is the same as reading their fields in order.
using Spans = absl::InlinedVector<absl::string_view, 1>;


struct Attribute {
  absl::string_view name;
  std::int32_t type = 0;
  Spans g;
  absl::InlinedVector<absl::string_view, 1> graphs;
  bool hasBody() const {
    return type == attribute_field::kTypeGraph || !g.empty() || !graphs.empty();
  }
};

class WireWalker {
 public:
  WireWalker(absl::string_view file, absl::string_view origin, GraphBuilder* b)
      : file_(file), origin_(origin), b_(b) {}

  absl::Status Walk() {
    std::int64_t ir_version = 0, opset = 0;
    absl::string_view producer_name, producer_version;
    std::vector<MetadataEntry> metadata;
    Spans graph;
    std::vector<absl::string_view> functions;
    WireReader r(file_);
    WireField f;
    while (r.Next(&f)) {
      switch (f.number) {
        case model_field::kIrVersion:
          if (IsVarint(f)) ir_version = static_cast<std::int64_t>(f.varint);
          break;
        case model_field::kProducerName:
          if (IsLen(f)) producer_name = f.bytes;
          break;
        case model_field::kProducerVersion:
          if (IsLen(f)) producer_version = f.bytes;
          break;
        case model_field::kGraph:
          if (IsLen(f)) graph.push_back(f.bytes);
          break;
        case model_field::kOpsetImport:
          if (IsLen(f)) SEMMAP_RETURN_IF_ERROR(ReadOpset(f.bytes, &opset));
          break;
        case model_field::kMetadataProps:
          if (IsLen(f)) {
            SEMMAP_RETURN_IF_ERROR(b_->Charge(1));
            MetadataEntry kv;
            WireReader entry(f.bytes);
            if (!ReadEntry(&entry, &kv)) return Malformed(entry, "StringStringEntryProto");
            metadata.push_back(kv);
          }
          break;
        case model_field::kFunctions:
          if (IsLen(f)) functions.push_back(f.bytes);
          break;
        default:
          break;
      }
    }
    if (!r.ok()) return Malformed(r, "ModelProto");
    // An empty GraphProto (zero bytes) is no graph: nothing in it to map.
    const bool has_graph = std::any_of(graph.begin(), graph.end(),
                                       [](absl::string_view g) { return !g.empty(); });
    if (!has_graph || ir_version <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin_, ": not an ONNX model (", !has_graph ? "no graph" : "no ir_version",
          "; is this a different protobuf message?)"));
    }
    b_->SetModelInfo(ir_version, producer_name, producer_version, opset);
    for (const MetadataEntry& kv : metadata) b_->AddModelMetadata(kv.first, kv.second);
    SEMMAP_RETURN_IF_ERROR(AddGraph(graph, Subgraph()));
    for (absl::string_view fn : functions) SEMMAP_RETURN_IF_ERROR(AddFunction(fn));
    return absl::OkStatus();
  }

 private:
  // `s` describes the graph (kind, owner, attribute, parent); its name is
  // read here. Initializers, then sparse initializers, then inputs define
  // values; then the nodes, each followed by its subgraphs. Long (about 70
  // lines): one case per GraphProto field, then the definitions in that
  // order.
  absl::Status AddGraph(const Spans& spans, Subgraph s) {
    const int index = b_->subgraphCount();
    const bool main = s.kind == Subgraph::Kind::kMain;
    std::vector<absl::string_view> sparse;
    absl::string_view name;
    std::size_t nodes = 0;
    for (absl::string_view span : spans) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (!IsLen(f)) continue;
        switch (f.number) {
          case graph_field::kNode:
            ++nodes;
            break;
          case graph_field::kName:
            name = f.bytes;
            break;
          case graph_field::kInitializer:
            SEMMAP_RETURN_IF_ERROR(AddTensor(Spans{f.bytes}, index));
            break;
          case graph_field::kSparseInitializer:
            sparse.push_back(f.bytes);
            break;
          case graph_field::kInput: {
            absl::string_view value;
            SEMMAP_RETURN_IF_ERROR(ReadValueName(f.bytes, &value));
            if (main) SEMMAP_RETURN_IF_ERROR(b_->AddMainInput(value));
            SEMMAP_RETURN_IF_ERROR(b_->DefineValue(index, value));
            break;
          }
          case graph_field::kOutput:
            if (main) {
              absl::string_view value;
              SEMMAP_RETURN_IF_ERROR(ReadValueName(f.bytes, &value));
              SEMMAP_RETURN_IF_ERROR(b_->AddMainOutput(value));
            }
            break;
          default:
            break;
        }
      }
      if (!r.ok()) return Malformed(r, "GraphProto");
    }
    s.name = name;
    b_->AddSubgraph(s);
    if (main) b_->ReserveNodes(nodes);
    for (absl::string_view st : sparse) {
      Spans values;
      WireReader r(st);
      WireField f;
      while (r.Next(&f)) {
        if (f.number == kSparseValues && IsLen(f)) values.push_back(f.bytes);
      }
      if (!r.ok()) return Malformed(r, "SparseTensorProto");
      SEMMAP_RETURN_IF_ERROR(AddTensor(values, index));
    }
    for (absl::string_view span : spans) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        if (f.number == graph_field::kNode && IsLen(f)) {
          SEMMAP_RETURN_IF_ERROR(AddNode(f.bytes, index));
        }
      }
      // Already walked once without error.
    }
    return absl::OkStatus();
  }

  // Long (about 75 lines): a switch with one case per NodeProto field, in
  // onnx.proto's order, then the descent into the bodies; reads as the
  // message it decodes.
  absl::Status AddNode(absl::string_view bytes, int subgraph) {
    NodeFields n;
    inputs_.clear();
    outputs_.clear();
    attributes_.clear();
    metadata_.clear();
    bool descend = false;
    WireReader r(bytes);
    WireField f;
    while (r.Next(&f)) {
      if (!IsLen(f)) continue;
      switch (f.number) {
        case node_field::kInput:
          SEMMAP_RETURN_IF_ERROR(b_->Charge(1));
          inputs_.push_back(f.bytes);
          break;
        case node_field::kOutput:
          SEMMAP_RETURN_IF_ERROR(b_->Charge(1));
          outputs_.push_back(f.bytes);
          break;
        case node_field::kName:
          n.name = f.bytes;
          break;
        case node_field::kOpType:
          n.op_type = f.bytes;
          break;
        case node_field::kAttribute: {
          Attribute a;
          SEMMAP_RETURN_IF_ERROR(ReadAttribute(f.bytes, &a));
          SEMMAP_RETURN_IF_ERROR(b_->Charge(1));
          attributes_.push_back(a.name);
          descend = descend || a.hasBody();
          break;
        }
        case node_field::kDocString:
          n.doc_string = f.bytes;
          break;
        case node_field::kDomain:
          n.domain = f.bytes;
          break;
        case node_field::kMetadataProps: {
          // Unknown to older onnx.proto: an entry protobuf cannot parse is
          // dropped, as the protobuf loader does.
          SEMMAP_RETURN_IF_ERROR(b_->Charge(1));
          MetadataEntry kv;
          WireReader entry(f.bytes);
          if (ReadEntry(&entry, &kv)) metadata_.push_back(kv);
          break;
        }
        default:
          break;
      }
    }
    if (!r.ok()) return Malformed(r, "NodeProto");
    n.inputs = inputs_;
    n.outputs = outputs_;
    n.attribute_names = attributes_;
    n.metadata = metadata_;
    NodeId id;
    SEMMAP_RETURN_IF_ERROR(b_->AddNode(subgraph, n, &id));
    if (!descend) return absl::OkStatus();
    // Descend right after the owning node, in attribute order (the lists
    // above are stored: the scratch vectors are free again).
    WireReader again(bytes);
    while (again.Next(&f)) {
      if (f.number != node_field::kAttribute || !IsLen(f)) continue;
      Attribute a;
      SEMMAP_RETURN_IF_ERROR(ReadAttribute(f.bytes, &a));
      if (a.type == attribute_field::kTypeGraph || !a.g.empty()) {
        SEMMAP_RETURN_IF_ERROR(AddAttributeGraph(a.g, id, a.name, subgraph));
      }
      for (absl::string_view body : a.graphs) {
        SEMMAP_RETURN_IF_ERROR(AddAttributeGraph(Spans{body}, id, a.name, subgraph));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddAttributeGraph(const Spans& spans, NodeId owner, absl::string_view attribute,
                                 int parent) {
    SEMMAP_RETURN_IF_ERROR(b_->CheckNesting(parent));
    Subgraph s;
    s.kind = Subgraph::Kind::kAttribute;
    s.owner = owner;
    s.attribute = attribute;
    s.parent = parent;
    return AddGraph(spans, s);
  }

  absl::Status AddFunction(absl::string_view bytes) {
    Subgraph s;
    s.kind = Subgraph::Kind::kFunction;
    std::vector<absl::string_view> inputs;
    WireReader r(bytes);
    WireField f;
    while (r.Next(&f)) {
      if (!IsLen(f)) continue;
      if (f.number == function_field::kName) s.name = f.bytes;
      if (f.number == function_field::kDomain) s.domain = f.bytes;
      if (f.number == function_field::kInput) inputs.push_back(f.bytes);
    }
    if (!r.ok()) return Malformed(r, "FunctionProto");
    const int index = b_->AddSubgraph(s);
    for (absl::string_view in : inputs) SEMMAP_RETURN_IF_ERROR(b_->DefineValue(index, in));
    WireReader nodes(bytes);
    while (nodes.Next(&f)) {
      if (f.number == function_field::kNode && IsLen(f)) {
        SEMMAP_RETURN_IF_ERROR(AddNode(f.bytes, index));
      }
    }
    return absl::OkStatus();
  }

  absl::Status AddTensor(const Spans& spans, int subgraph) {
    absl::string_view name;
    std::int32_t elem_type = 0;
    dims_.clear();
    std::int32_t location = 0;
    for (absl::string_view span : spans) {
      WireReader r(span);
      WireField f;
      while (r.Next(&f)) {
        switch (f.number) {
          case tensor_field::kDims:
            if (IsVarint(f)) {
              dims_.push_back(static_cast<std::int64_t>(f.varint));
            } else if (IsLen(f) &&
                       !ForEachPackedVarint(f.bytes, [this](std::uint64_t v) {
                         dims_.push_back(static_cast<std::int64_t>(v));
                       })) {
              return MalformedAt(f.bytes.data(), "malformed packed dims in TensorProto");
            }
            break;
          case tensor_field::kDataType:
            if (IsVarint(f)) elem_type = static_cast<std::int32_t>(f.varint);
            break;
          case tensor_field::kName:
            if (IsLen(f)) name = f.bytes;
            break;
          case tensor_field::kDataLocation:
            if (IsVarint(f)) {
              const auto v = static_cast<std::int32_t>(f.varint);
              if (v == 0 || v == tensor_field::kExternal) location = v;
            }
            break;
          default:
            break;  // payloads (raw_data, *_data, external_data) skipped by length
        }
      }
      if (!r.ok()) return Malformed(r, "TensorProto");
    }
    return b_->AddInitializer(name, elem_type, dims_, location == tensor_field::kExternal,
                              subgraph);
  }

  absl::Status ReadAttribute(absl::string_view bytes, Attribute* a) {
    WireReader r(bytes);
    WireField f;
    while (r.Next(&f)) {
      switch (f.number) {
        case attribute_field::kName:
          if (IsLen(f)) a->name = f.bytes;
          break;
        case attribute_field::kType:
          if (IsVarint(f)) {
            const auto v = static_cast<std::int32_t>(f.varint);
            if (v >= 0 && v <= attribute_field::kMaxKnownType) a->type = v;
          }
          break;
        case attribute_field::kG:
          if (IsLen(f)) a->g.push_back(f.bytes);
          break;
        case attribute_field::kGraphs:
          if (IsLen(f)) a->graphs.push_back(f.bytes);
          break;
        default:
          break;
      }
    }
    return r.ok() ? absl::OkStatus() : Malformed(r, "AttributeProto");
  }

  absl::Status ReadValueName(absl::string_view bytes, absl::string_view* name) {
    *name = absl::string_view();
    WireReader r(bytes);
    WireField f;
    while (r.Next(&f)) {
      if (f.number == kValueInfoName && IsLen(f)) *name = f.bytes;
    }
    return r.ok() ? absl::OkStatus() : Malformed(r, "ValueInfoProto");
  }

  absl::Status ReadOpset(absl::string_view bytes, std::int64_t* opset) {
    absl::string_view domain;
    std::int64_t version = 0;
    WireReader r(bytes);
    WireField f;
    while (r.Next(&f)) {
      if (f.number == kOpsetDomain && IsLen(f)) domain = f.bytes;
      if (f.number == kOpsetVersion && IsVarint(f)) version = static_cast<std::int64_t>(f.varint);
    }
    if (!r.ok()) return Malformed(r, "OperatorSetIdProto");
    if (version < 0) return OpsetOutOfRange(origin_, version);
    if (domain.empty() || domain == "ai.onnx") *opset = version;
    return absl::OkStatus();
  }

  static bool ReadEntry(WireReader* r, MetadataEntry* kv) {
    WireField f;
    while (r->Next(&f)) {
      if (!IsLen(f)) continue;
      if (f.number == kEntryKey) kv->first = f.bytes;
      if (f.number == kEntryValue) kv->second = f.bytes;
    }
    return r->ok();
  }

  std::uint64_t OffsetOf(const char* at) const {
    return static_cast<std::uint64_t>(at - file_.data());
  }

  absl::Status Malformed(const WireReader& r, const char* message) const {
    return MalformedOnnx(origin_, file_, r, message);
  }

  absl::Status MalformedAt(const char* at, const char* what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(origin_, ": not a valid ONNX model: byte offset ", OffsetOf(at), ": ", what));
  }

  absl::string_view file_;
  absl::string_view origin_;
  GraphBuilder* b_;
  // Scratch lists, reused by AddNode (stored before it recurses) and AddTensor.
  std::vector<absl::string_view> inputs_;
  std::vector<absl::string_view> outputs_;
  std::vector<absl::string_view> attributes_;
  std::vector<MetadataEntry> metadata_;
  std::vector<std::int64_t> dims_;
};

}  // namespace

absl::Status LoadWithWireScan(absl::string_view bytes, absl::string_view origin,
                              const GraphOptions& options, GraphBuilder* builder) {
  return WireWalker(bytes, origin, builder).Walk();
}

}  // namespace internal
}  // namespace semmap
