// The ONNX messages as the wire walks read them: one decoder per message
// type (ModelProto's header, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto, StringStringEntryProto, OperatorSetIdProto), shared by
// the wire-scan loader (wire_loader.cc) and the wire-level model index
// (wire_model_index.cc), so a field is read one way wherever it is read.
// Every decoder returns views into the bytes it is given and follows
// protobuf's rules: the last occurrence of a scalar wins, a message field
// written twice is the merge of both (Spans), enum values unknown to
// onnx.proto are ignored.
#ifndef SEMMAP_SRC_GRAPH_WIRE_MESSAGES_H_
#define SEMMAP_SRC_GRAPH_WIRE_MESSAGES_H_

#include <cstdint>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/graph_builder.h"
#include "graph/onnx_fields.h"
#include "graph/wire_reader.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

// The occurrences of one singular message field: protobuf merges them, which
// is the same as reading their fields in order.
using Spans = absl::InlinedVector<absl::string_view, 1>;

// The file a walk reads (offsets in errors count from its start) and the
// name errors give it.
struct WireSource {
  absl::string_view file;
  absl::string_view origin;

  // InvalidArgument for the failed read `r` in a `message` (MalformedOnnx).
  absl::Status Malformed(const WireReader& r, const char* message) const {
    return MalformedOnnx(origin, file, r, message);
  }
  // InvalidArgument "<origin>: not a valid ONNX model: byte offset N: <what>".
  absl::Status MalformedAt(const char* at, const char* what) const;
};

// ModelProto's fields a walk reads.
struct ModelFields {
  std::uint64_t ir_version = 0;  // int64 fields, as their varint bits
  std::uint64_t model_version = 0;
  absl::string_view producer_name, producer_version, domain;
  Spans graph;
  std::vector<absl::string_view> opset_imports;   // OperatorSetIdProto payloads
  std::vector<absl::string_view> metadata_props;  // StringStringEntryProto payloads
  std::vector<absl::string_view> functions;       // FunctionProto payloads
};
absl::Status ReadModel(const WireSource& source, ModelFields* model);

// An AttributeProto's name, type and bodies (g, its occurrences merged;
// graphs, each a body of its own).
struct AttributeFields {
  absl::string_view name;
  std::int32_t type = 0;
  Spans g;
  absl::InlinedVector<absl::string_view, 1> graphs;
  bool hasBody() const {
    return type == attribute_field::kTypeGraph || !g.empty() || !graphs.empty();
  }
};
absl::Status ReadAttribute(const WireSource& source, absl::string_view bytes,
                           AttributeFields* a);

// Calls `body(attribute, spans)` for each body of the NodeProto `bytes`, in
// attribute order: an attribute's g (when of type GRAPH or present), then
// each of its graphs.
template <typename Body>
absl::Status ForEachBody(const WireSource& source, absl::string_view bytes, Body&& body) {
  WireReader r(bytes);
  WireField f;
  while (r.Next(&f)) {
    if (f.number != node_field::kAttribute || !IsLen(f)) continue;
    AttributeFields a;
    if (absl::Status s = ReadAttribute(source, f.bytes, &a); !s.ok()) return s;
    if (a.type == attribute_field::kTypeGraph || !a.g.empty()) {
      if (absl::Status s = body(a.name, a.g); !s.ok()) return s;
    }
    for (absl::string_view graph : a.graphs) {
      if (absl::Status s = body(a.name, Spans{graph}); !s.ok()) return s;
    }
  }
  return r.ok() ? absl::OkStatus() : source.Malformed(r, "NodeProto");
}

// A TensorProto's name, element type and where its data is. With `dims`,
// its dims are appended there (packed or not). `bytes` is the last span.
struct TensorFields {
  absl::string_view bytes;
  absl::string_view name;
  std::int32_t elem_type = 0;
  bool external = false;       // data_location EXTERNAL
  absl::string_view location;  // external_data "location"
};
absl::Status ReadTensor(const WireSource& source, const Spans& spans, TensorFields* t,
                        std::vector<std::int64_t>* dims);
// A SparseTensorProto's values tensor (its occurrences merged).
absl::Status ReadSparseValues(const WireSource& source, absl::string_view bytes, Spans* values);

// A ValueInfoProto's name, and whether it has a type (field 2).
absl::Status ReadValueInfo(const WireSource& source, absl::string_view bytes,
                           absl::string_view* name, bool* typed);
// A StringStringEntryProto: false, or InvalidArgument, when malformed.
bool ReadEntry(absl::string_view bytes, MetadataEntry* kv);
absl::Status ReadEntry(const WireSource& source, absl::string_view bytes, MetadataEntry* kv);
// An OperatorSetIdProto: `*opset` set when its domain is the default one.
absl::Status ReadOpset(const WireSource& source, absl::string_view bytes, std::int64_t* opset);

// Reads NodeProtos into NodeFields, its lists kept in scratch lists reused
// from node to node (valid until the next Read).
class NodeReader {
 public:
  explicit NodeReader(const WireSource& source) : source_(source) {}

  // Reads the NodeProto `bytes` into `*n`; `charge(k)` is called before k
  // list entries are kept and may refuse them (an absl::Status);
  // `*has_body`: an attribute holds a GRAPH or GRAPHS body. Metadata
  // entries protobuf cannot parse are dropped, as the protobuf loader does.
  template <typename Charge>
  absl::Status Read(absl::string_view bytes, Charge&& charge, NodeFields* n, bool* has_body);

 private:
  WireSource source_;
  std::vector<absl::string_view> inputs_, outputs_, attributes_;
  std::vector<MetadataEntry> metadata_;
};

// Long (about 60 lines): a switch with one case per NodeProto field, in
// onnx.proto's order; reads as the message it decodes.
template <typename Charge>
absl::Status NodeReader::Read(absl::string_view bytes, Charge&& charge, NodeFields* n,
                              bool* has_body) {
  inputs_.clear();
  outputs_.clear();
  attributes_.clear();
  metadata_.clear();
  *n = NodeFields();
  *has_body = false;
  WireReader r(bytes);
  WireField f;
  while (r.Next(&f)) {
    if (!IsLen(f)) continue;
    absl::Status s;
    switch (f.number) {
      case node_field::kInput:
        if ((s = charge(1)).ok()) inputs_.push_back(f.bytes);
        break;
      case node_field::kOutput:
        if ((s = charge(1)).ok()) outputs_.push_back(f.bytes);
        break;
      case node_field::kName:
        n->name = f.bytes;
        break;
      case node_field::kOpType:
        n->op_type = f.bytes;
        break;
      case node_field::kAttribute: {
        AttributeFields a;
        if ((s = ReadAttribute(source_, f.bytes, &a)).ok() && (s = charge(1)).ok()) {
          attributes_.push_back(a.name);
          *has_body = *has_body || a.hasBody();
        }
        break;
      }
      case node_field::kDocString:
        n->doc_string = f.bytes;
        break;
      case node_field::kDomain:
        n->domain = f.bytes;
        break;
      case node_field::kMetadataProps: {
        MetadataEntry kv;
        if ((s = charge(1)).ok() && ReadEntry(f.bytes, &kv)) metadata_.push_back(kv);
        break;
      }
      default:
        break;
    }
    if (!s.ok()) return s;
  }
  if (!r.ok()) return source_.Malformed(r, "NodeProto");
  n->inputs = inputs_;
  n->outputs = outputs_;
  n->attribute_names = attributes_;
  n->metadata = metadata_;
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_WIRE_MESSAGES_H_
