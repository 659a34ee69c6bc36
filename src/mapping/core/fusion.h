// The parts of a fused node (an exporter's or ONNX Runtime's fusion: a Conv
// with its BatchNorm folded in, FusedConv, SkipLayerNormalization) and the
// one it still is. Used where the parts are known: the reference's replaced
// nodes (strategies/fused_nodes.h) and the value names a fusion kept
// (core/tensor_evidence.h).
#ifndef SEMMAP_SRC_MAPPING_CORE_FUSION_H_
#define SEMMAP_SRC_MAPPING_CORE_FUSION_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {

// How much of op type `fused` is op type `part`: the length of `part` when
// it occurs in `fused` on word boundaries of its CamelCase ("Conv" in
// "FusedConv", "LayerNormalization" in "SkipLayerNormalization", "MatMul"
// in "MatMulInteger"), else 0. A fused node carries the operation of the
// part with the largest overlap.
std::size_t OpTypeOverlap(absl::string_view fused, absl::string_view part);

// One part of a fused node: an operation it does and that operation's
// module.
struct FusedPart {
  absl::string_view op_type;
  ModuleId module = kNoModule;
};

// The module a fused node of op type `op_type` still is: the module of the
// parts whose op type it carries (the largest OpTypeOverlap), when those
// parts are of one module and every module in `weight_owners` (the owners
// of the parameters it reads) is that module or below it. kNoModule when no
// part dominates (an Attention replacing MatMuls of three projections, an
// EmbedLayerNormalization reading three embeddings' weights).
ModuleId DominantModule(absl::string_view op_type, absl::Span<const FusedPart> parts,
                        absl::Span<const ModuleId> weight_owners, const Manifest& manifest);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_FUSION_H_
