// Fuzz target for Graph::Parse (ONNX ModelProto bytes). Properties:
//   - an error names the origin and is InvalidArgument;
//   - a loaded graph keeps its invariants (graph_checks.h): unique node
//     ids that find() returns, valid subgraph links and depths within the
//     limit, producers that produce, sorted consumer lists;
//   - a node limit below the node count refuses the same bytes.
// When GraphOptions offers a choice of loader (fuzz/CMakeLists.txt then defines
// SEMMAP_FUZZ_COMPARE_LOADERS), every loader parses the input and they must
// agree: same verdict, same nodes.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "graph_checks.h"
#include "semmap/graph.h"

namespace {

constexpr absl::string_view kOrigin = "fuzz.onnx";

absl::StatusOr<semmap::Graph> ParseChecked(absl::string_view bytes,
                                           const semmap::GraphOptions& options) {
  absl::StatusOr<semmap::Graph> g = semmap::Graph::Parse(bytes, kOrigin, options);
  if (g.ok()) {
    semmap_fuzz::CheckGraph(*g, options);
  } else {
    semmap_fuzz::CheckErrorNamesOrigin(g.status(), kOrigin);
    SEMMAP_FUZZ_CHECK(g.status().code() == absl::StatusCode::kInvalidArgument);
  }
  return g;
}

#ifdef SEMMAP_FUZZ_COMPARE_LOADERS
// The loaders promise the same Graph. The wire scan only checks the length
// of the fields it skips, so it may accept bytes protobuf rejects, never the
// reverse.
void CompareLoaders(absl::string_view bytes, const semmap::GraphOptions& options) {
  semmap::GraphOptions wire_options = options;
  wire_options.loader = semmap::Loader::kWireScan;
  semmap::GraphOptions proto_options = options;
  proto_options.loader = semmap::Loader::kProtobuf;
  absl::StatusOr<semmap::Graph> wire = ParseChecked(bytes, wire_options);
  absl::StatusOr<semmap::Graph> proto = ParseChecked(bytes, proto_options);
  if (proto.ok()) SEMMAP_FUZZ_CHECK(wire.ok());
  if (!wire.ok() || !proto.ok()) return;
  SEMMAP_FUZZ_CHECK(wire->size() == proto->size());
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(wire->size()); ++i) {
    const semmap::Node& a = wire->node(i);
    const semmap::Node& b = proto->node(i);
    SEMMAP_FUZZ_CHECK(a.id == b.id && a.name == b.name && a.op_type == b.op_type &&
                      a.domain == b.domain && a.subgraph == b.subgraph);
    SEMMAP_FUZZ_CHECK(a.inputs == b.inputs && a.outputs == b.outputs);
    SEMMAP_FUZZ_CHECK(a.attribute_names == b.attribute_names);
    SEMMAP_FUZZ_CHECK(a.metadata == b.metadata && a.doc_string == b.doc_string);
  }
  SEMMAP_FUZZ_CHECK(wire->subgraphs().size() == proto->subgraphs().size());
  for (std::size_t s = 0; s < wire->subgraphs().size(); ++s) {
    const semmap::Subgraph& a = wire->subgraphs()[s];
    const semmap::Subgraph& b = proto->subgraphs()[s];
    SEMMAP_FUZZ_CHECK(a.kind == b.kind && a.name == b.name && a.owner == b.owner &&
                      a.attribute == b.attribute && a.domain == b.domain &&
                      a.parent == b.parent && a.depth == b.depth);
  }
  SEMMAP_FUZZ_CHECK(wire->initializers().size() == proto->initializers().size());
  for (std::size_t t = 0; t < wire->initializers().size(); ++t) {
    const semmap::TensorInfo& a = wire->initializers()[t];
    const semmap::TensorInfo& b = proto->initializers()[t];
    SEMMAP_FUZZ_CHECK(a.name == b.name && a.elem_type == b.elem_type && a.dims == b.dims &&
                      a.external == b.external && a.subgraph == b.subgraph);
  }
  SEMMAP_FUZZ_CHECK(wire->inputs() == proto->inputs() && wire->outputs() == proto->outputs());
  SEMMAP_FUZZ_CHECK(wire->irVersion() == proto->irVersion() && wire->opset() == proto->opset());
  SEMMAP_FUZZ_CHECK(wire->producerName() == proto->producerName() &&
                    wire->producerVersion() == proto->producerVersion());
  SEMMAP_FUZZ_CHECK(wire->modelMetadata() == proto->modelMetadata());
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  semmap::GraphOptions options;
  options.max_subgraph_depth = 16;  // deep enough to nest, shallow enough to be fast
  absl::StatusOr<semmap::Graph> g = ParseChecked(bytes, options);
  if (g.ok() && g->size() > 0) {
    semmap::GraphOptions small = options;
    small.max_nodes = g->size() - 1;
    SEMMAP_FUZZ_CHECK(!semmap::Graph::Parse(bytes, kOrigin, small).ok());
  }
#ifdef SEMMAP_FUZZ_COMPARE_LOADERS
  CompareLoaders(bytes, options);
#endif
  return 0;
}
