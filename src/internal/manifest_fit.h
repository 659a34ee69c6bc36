// Whether a manifest describes the model a graph was exported from
// (semmap::ManifestFit, mapper.h), judged from the names the graph keeps.
#ifndef SEMMAP_SRC_INTERNAL_MANIFEST_FIT_H_
#define SEMMAP_SRC_INTERNAL_MANIFEST_FIT_H_

#include <vector>

#include "internal/tensor_evidence.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"
#include "semmap/mapping.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// Linear in the graph's nodes, names and initializers plus the manifest's
// modules (each distinct scope is parsed once).
ManifestFit AssessManifestFit(const Graph& graph, const Manifest& manifest,
                              const Rules& rules, const RootBinding& binding,
                              const TensorEvidence& tensors);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_INTERNAL_MANIFEST_FIT_H_
