// The protobuf loader: parses a whole ModelProto with onnx_proto and feeds
// it to a GraphBuilder. Limited to 2 GB (protobuf's message limit).
#ifndef SEMMAP_SRC_GRAPH_PROTOBUF_LOADER_H_
#define SEMMAP_SRC_GRAPH_PROTOBUF_LOADER_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/graph_builder.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

// Errors name `origin`: InvalidArgument for bytes that are not a valid
// ONNX ModelProto or exceed a limit of `options`.
absl::Status LoadWithProtobuf(absl::string_view bytes, absl::string_view origin,
                              const GraphOptions& options, GraphBuilder* builder);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_PROTOBUF_LOADER_H_
