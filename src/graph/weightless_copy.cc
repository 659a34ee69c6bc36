#include "graph/weightless_copy.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "graph/onnx_fields.h"
#include "graph/wire_reader.h"
#include "graph/wire_writer.h"

namespace semmap {
namespace internal {
namespace {

// The messages the copy descends into.
enum class Message { kModel, kGraph, kNode, kAttribute, kTensor, kSparseTensor, kValueInfo,
                     kFunction };

const char* MessageName(Message m) {
  switch (m) {
    case Message::kModel: return "ModelProto";
    case Message::kGraph: return "GraphProto";
    case Message::kNode: return "NodeProto";
    case Message::kAttribute: return "AttributeProto";
    case Message::kTensor: return "TensorProto";
    case Message::kSparseTensor: return "SparseTensorProto";
    case Message::kValueInfo: return "ValueInfoProto";
    case Message::kFunction: return "FunctionProto";
  }
  return "message";
}

// What becomes of a field: dropped, copied byte for byte, or copied as a
// message of the given kind (filtered in turn).
struct Keep {
  bool keep = false;
  bool nested = false;
  Message kind = Message::kModel;
};
constexpr Keep kDrop{};
constexpr Keep kVerbatim{true, false, Message::kModel};
constexpr Keep Nested(Message kind) { return Keep{true, true, kind}; }

Keep Rule(Message message, std::uint32_t field) {
  switch (message) {
    case Message::kModel:
      switch (field) {
        case model_field::kIrVersion: case model_field::kProducerName:
        case model_field::kProducerVersion: case model_field::kDomain:
        case model_field::kModelVersion: case model_field::kOpsetImport:
          return kVerbatim;
        case model_field::kGraph: return Nested(Message::kGraph);
        case model_field::kFunctions: return Nested(Message::kFunction);
        default: return kDrop;
      }
    case Message::kGraph:
      switch (field) {
        case graph_field::kNode: return Nested(Message::kNode);
        case graph_field::kName: return kVerbatim;
        case graph_field::kInitializer: return Nested(Message::kTensor);
        case graph_field::kSparseInitializer: return Nested(Message::kSparseTensor);
        case graph_field::kInput: case graph_field::kOutput: return Nested(Message::kValueInfo);
        default: return kDrop;
      }
    case Message::kNode:
      switch (field) {
        case node_field::kInput: case node_field::kOutput: case node_field::kName:
        case node_field::kOpType: case node_field::kDomain: case 8:  // overload
          return kVerbatim;
        case node_field::kAttribute: return Nested(Message::kAttribute);
        default: return kDrop;
      }
    case Message::kAttribute:
      switch (field) {
        case attribute_field::kName: case attribute_field::kType: case 21:  // ref_attr_name
          return kVerbatim;
        case attribute_field::kG: case attribute_field::kGraphs: return Nested(Message::kGraph);
        default: return kDrop;
      }
    case Message::kTensor:
      switch (field) {
        case tensor_field::kDims: case tensor_field::kDataType: case tensor_field::kName:
          return kVerbatim;
        default: return kDrop;
      }
    case Message::kSparseTensor:
      if (field == kSparseValues) return Nested(Message::kTensor);
      return field == 3 ? kVerbatim : kDrop;  // dims
    case Message::kValueInfo:
      return field == kValueInfoName ? kVerbatim : kDrop;
    case Message::kFunction:
      switch (field) {
        case function_field::kName: case function_field::kInput: case 5:  // output
        case 6:  // attribute names
        case 9:  // opset_import
        case function_field::kDomain: case 13:  // overload
          return kVerbatim;
        case function_field::kNode: return Nested(Message::kNode);
        default: return kDrop;
      }
  }
  return kDrop;
}

class Copier {
 public:
  Copier(absl::string_view file, absl::string_view origin, int max_depth)
      : file_(file), origin_(origin), max_depth_(max_depth) {}

  // Appends the filtered fields of `message` (of kind `kind`) to `out`.
  // `depth` counts graphs entered below the main graph.
  absl::Status Copy(absl::string_view message, Message kind, int depth, std::string* out) {
    WireReader r(message);
    WireField f;
    const char* start = r.position();
    while (r.Next(&f)) {
      const absl::string_view raw(start, static_cast<std::size_t>(r.position() - start));
      start = r.position();
      const Keep keep = Rule(kind, f.number);
      if (!keep.keep) continue;
      if (!keep.nested) {
        out->append(raw.data(), raw.size());
        continue;
      }
      if (!IsLen(f)) continue;  // a nested field of the wrong wire type: not read by semmap
      int child_depth = depth;
      if (keep.kind == Message::kGraph && kind == Message::kAttribute) {
        if (++child_depth > max_depth_) {
          return absl::InvalidArgumentError(absl::StrCat(
              origin_, ": subgraphs nested deeper than ", max_depth_, " levels"));
        }
      }
      std::string child;
      SEMMAP_RETURN_IF_ERROR(Copy(f.bytes, keep.kind, child_depth, &child));
      AppendLenField(out, f.number, child);
    }
    if (!r.ok()) return MalformedOnnx(origin_, file_, r, MessageName(kind));
    return absl::OkStatus();
  }

 private:
  absl::string_view file_;
  absl::string_view origin_;
  int max_depth_;
};

}  // namespace

absl::StatusOr<std::string> WeightlessCopy(absl::string_view model, absl::string_view origin,
                                           int max_subgraph_depth) {
  std::string out;
  Copier copier(model, origin, max_subgraph_depth);
  SEMMAP_RETURN_IF_ERROR(copier.Copy(model, Message::kModel, 0, &out));
  return out;
}

namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

// FNV-1a over 64-bit little-endian words (the last one zero-padded), each
// string preceded by its length: a fingerprint of names at memory speed.
class Fnv {
 public:
  void Add(absl::string_view s) {
    AddNumber(s.size());
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) Word(Load(s.data() + i, 8));
    if (i < s.size()) Word(Load(s.data() + i, s.size() - i));
  }
  void AddNumber(std::uint64_t v) { Word(v); }
  std::uint64_t value() const { return h_; }

 private:
  static std::uint64_t Load(const char* p, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < n; ++k) {
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[k])) << (8 * k);
    }
    return v;
  }
  void Word(std::uint64_t w) {
    h_ ^= w;
    h_ *= kFnvPrime;
  }
  std::uint64_t h_ = kFnvOffset;
};

}  // namespace

std::uint64_t GraphFingerprint(const Graph& graph) {
  Fnv h;
  h.AddNumber(graph.size());
  for (const Node& n : graph.nodes()) {
    h.Add(n.name);
    h.Add(n.op_type);
    h.Add(n.domain);
    h.AddNumber(static_cast<std::uint64_t>(n.subgraph));
    h.AddNumber(n.inputs.size());
    for (absl::string_view v : n.inputs) h.Add(v);
    h.AddNumber(n.outputs.size());
    for (absl::string_view v : n.outputs) h.Add(v);
  }
  h.AddNumber(graph.inputs().size());
  for (absl::string_view v : graph.inputs()) h.Add(v);
  h.AddNumber(graph.outputs().size());
  for (absl::string_view v : graph.outputs()) h.Add(v);
  h.AddNumber(graph.initializers().size());
  for (const TensorInfo& t : graph.initializers()) {
    h.Add(t.name);
    h.AddNumber(static_cast<std::uint64_t>(t.elem_type));
    h.AddNumber(t.dims.size());
    for (std::int64_t d : t.dims) h.AddNumber(static_cast<std::uint64_t>(d));
  }
  return h.value();
}

}  // namespace internal
}  // namespace semmap
