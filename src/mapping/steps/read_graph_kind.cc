#include "mapping/steps/read_graph_kind.h"

namespace semmap {
namespace internal {
namespace {

// A tenth: plain exports and copies that kept their names answer 60-100 %
// of their nodes from names, stripped copies and dynamo exports after
// onnxslim or ONNX Runtime (node metadata dropped) under 5 % on the corpus.
constexpr std::size_t kNamedShare = 10;

}  // namespace

GraphKind ReadGraphKind(const OpTraits& ops, const std::vector<MappingRecord>& records) {
  std::size_t named = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (ops.IsQuantizerOp(static_cast<NodeId>(i))) return GraphKind::kQuantized;
    const Strategy s = records[i].strategy;
    named += records[i].mapped() && (s == Strategy::kExactScope || s == Strategy::kExporterMetadata ||
                                      s == Strategy::kScopePrefix);
  }
  return named * kNamedShare >= records.size() && named > 0 ? GraphKind::kNamed : GraphKind::kUnnamed;
}

}  // namespace internal
}  // namespace semmap
