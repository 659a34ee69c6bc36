// The parts of a serialized ONNX model that cutting out a region of its main
// graph needs (extract, stages), indexed at the wire level over the file's own
// bytes: views, nothing copied, tensor payloads never read. No protobuf
// parse, so no 2 GB limit and no dependence on the onnx version.
//
// Singular fields are read as protobuf reads them (the last occurrence; a
// message field written twice is merged), repeated ones in order.
#ifndef SEMMAP_SRC_GRAPH_WIRE_MODEL_INDEX_H_
#define SEMMAP_SRC_GRAPH_WIRE_MODEL_INDEX_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

struct WireNode {
  absl::string_view bytes;  // the NodeProto's payload
  absl::string_view name;
  absl::string_view op_type;
  std::vector<absl::string_view> inputs;
  std::vector<absl::string_view> outputs;
  // The names the node's GRAPH / GRAPHS bodies read from enclosing scopes
  // (used inside, defined nowhere inside), per body in attribute order,
  // repeats kept, empty names left out.
  std::vector<absl::string_view> outer_reads;
};

struct WireTensor {
  absl::string_view bytes;    // the TensorProto's payload
  bool external = false;      // data_location EXTERNAL
  absl::string_view location;  // external_data "location"
};

struct WireValueInfo {
  absl::string_view bytes;  // the ValueInfoProto's payload
  bool typed = false;       // has a type (field 2)
};

struct WireModel {
  std::uint64_t ir_version = 0;  // int64 fields, as their varint bits
  std::uint64_t model_version = 0;
  absl::string_view producer_name, producer_version, domain;
  std::vector<absl::string_view> opset_imports;  // OperatorSetIdProto payloads
  std::vector<absl::string_view> functions;      // FunctionProto payloads
  absl::string_view graph_name;
  std::vector<WireNode> nodes;  // the main graph's, in order
  // By name; the first of a name wins, as a lookup by name finds it.
  absl::flat_hash_map<absl::string_view, WireTensor> initializers;
  absl::flat_hash_map<absl::string_view, absl::string_view> sparse_initializers;
  // value_info (first of a name), overridden by outputs, then by inputs.
  absl::flat_hash_map<absl::string_view, WireValueInfo> types;
  absl::flat_hash_set<absl::string_view> graph_outputs;
};

// Every value a top-level node reads: its inputs, then the outer names its
// bodies read (WireNode::outer_reads), in order, repeats kept, empty names
// (absent optional inputs) left out.
std::vector<absl::string_view> ValuesRead(const WireNode& node);

// Indexes the model `bytes` (usually a memory map of `origin`).
// InvalidArgument naming `origin` and the byte offset for a malformed
// message, for a model without a graph, or for bodies nested deeper than
// `max_subgraph_depth`.
absl::StatusOr<WireModel> IndexWireModel(absl::string_view bytes, absl::string_view origin,
                                         int max_subgraph_depth);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_WIRE_MODEL_INDEX_H_
