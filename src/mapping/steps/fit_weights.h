// The manifest fit check's evidence from the unnamed weights of library
// modules (Linear, Conv2d...): their sizes against their module's
// parameters', where names say nothing.
#ifndef SEMMAP_SRC_MAPPING_STEPS_FIT_WEIGHTS_H_
#define SEMMAP_SRC_MAPPING_STEPS_FIT_WEIGHTS_H_

#include <string>

#include "absl/types/span.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/tensor_evidence.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/manifest_fit.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// The weights library modules (Linear, Conv2d...) read, by size: such a
// module's forward is one library op on its parameters, so a node its
// scope names reads no float initializer of two or more dimensions but of
// one of their sizes. Names may be gone ("onnx::Conv_12" once a BatchNorm
// is folded into the Conv; a transposed MatMul weight), sizes stay: another
// width shows here where names say nothing (a CNN exported with its
// BatchNorms folded names no conv weight).
// Counts fit->unnamed_weights and fit->weight_size_mismatches, the first
// of them described in `*first_mismatch`.
void CheckLibraryTensors(const Graph& graph, absl::Span<const ModuleId> node_modules,
                         const Manifest& manifest, const Rules& rules, const OpTraits& ops,
                         const TensorEvidence& tensors, ManifestFit* fit,
                         std::string* first_mismatch);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_FIT_WEIGHTS_H_
