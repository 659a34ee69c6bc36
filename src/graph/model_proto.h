// Reading a whole ModelProto with protobuf, for the protobuf loader
// (Loader::kProtobuf). Limited to 2 GB (protobuf's message limit); the wire
// scan, and annotate, extract and stages, which work at the wire level
// (wire_writer.h, wire_model_index.h), have no such limit.
#ifndef SEMMAP_SRC_GRAPH_MODEL_PROTO_H_
#define SEMMAP_SRC_GRAPH_MODEL_PROTO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"

namespace semmap {
namespace internal {

// Parses serialized bytes into `model` with the recursion limit
// `max_subgraph_depth` allows. InvalidArgument naming `origin` when the
// bytes are empty, above 2 GB, or not a parseable ModelProto. Checks nothing
// about the content.
absl::Status ParseModelProto(absl::string_view bytes, absl::string_view origin,
                             int max_subgraph_depth, onnx::ModelProto* model);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_MODEL_PROTO_H_
