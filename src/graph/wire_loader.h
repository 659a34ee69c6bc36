// The wire-scan loader: reads an ONNX ModelProto straight from the protobuf
// wire format (usually over a memory-mapped file) and feeds a GraphBuilder.
// Only the fields a Graph holds are read; tensor payloads, value types and
// attribute values are skipped by length, so loading costs time and memory
// in proportion to the graph, not to the weights, and has no 2 GB limit.
//
// Same traversal and the same Graph as the protobuf loader; protobuf's
// merge rules are followed (a singular message field written twice is the
// merge of both, the last scalar wins, enum values unknown to onnx.proto
// are ignored, packed and unpacked dims are both accepted).
#ifndef SEMMAP_SRC_GRAPH_WIRE_LOADER_H_
#define SEMMAP_SRC_GRAPH_WIRE_LOADER_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/graph_builder.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

// Errors name `origin` and, for malformed bytes, the byte offset:
// InvalidArgument for bytes that are not a well-formed ONNX ModelProto or
// exceed a limit of `options`. A main graph of many nodes is walked on
// `workers` threads (0: one per core, one below 64k nodes); the Graph is
// the same whatever their number.
absl::Status LoadWithWireScan(absl::string_view bytes, absl::string_view origin,
                              const GraphOptions& options, GraphBuilder* builder,
                              std::size_t workers = 0);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_WIRE_LOADER_H_
