// A weightless copy of a serialized ONNX model: what semmap reads of a
// graph (graph.h) and nothing else, as a smaller ModelProto. The
// provenance record (docs/record.md) carries one of the export it was made
// from, so that a processed copy of the file can be paired with it node by
// node as `--reference` pairs it with the export itself.
//
// Kept: the model's ir_version, producer, domain, model_version and opset
// imports; every graph's name, nodes, inputs and outputs (value names
// only), initializers and sparse initializers (name, data type and dims,
// no payload, no external-data location); each node's name, op type,
// domain, overload, inputs, outputs, attribute names and types with the
// bodies of GRAPH and GRAPHS attributes (copied the same way, so node
// order is the file's); model-local functions (name, domain, overload,
// inputs, outputs, attribute names, opset imports, nodes). Dropped: tensor
// payloads, doc strings, value types and value_info, metadata entries (the
// nodes' and the model's: the exporters' module stacks are half of a
// dynamo graph's weightless size, and the record keeps the mapping they
// led to), training info.
//
// The copy loads as a Graph with the same nodes, values and initializers
// (Graph::Parse), whose fingerprint (GraphFingerprint) is the source's.
#ifndef SEMMAP_SRC_GRAPH_WEIGHTLESS_COPY_H_
#define SEMMAP_SRC_GRAPH_WEIGHTLESS_COPY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/graph.h"

namespace semmap {
namespace internal {

// The copy of `model` (the serialized ModelProto of the file `origin`).
// InvalidArgument naming `origin` and the byte offset for a malformed
// message, a model without a graph, or subgraphs nested deeper than
// `max_subgraph_depth`.
absl::StatusOr<std::string> WeightlessCopy(absl::string_view model, absl::string_view origin,
                                           int max_subgraph_depth);

// A 64-bit digest (FNV-1a over 64-bit little-endian words, each string
// preceded by its length) of what identifies a graph for mapping: every
// node's name, op type, domain, subgraph, inputs and outputs in order, the
// graph inputs and outputs, and every initializer's name, type and dims.
// Stable across runs, builds and platforms. Not a cryptographic hash: it
// only tells quickly that two graphs differ, never alone that they match.
std::uint64_t GraphFingerprint(const Graph& graph);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_WEIGHTLESS_COPY_H_
