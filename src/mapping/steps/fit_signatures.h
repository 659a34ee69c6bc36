// The manifest fit check's evidence from forward signatures (schema 2):
// scoped nodes of a kind their module's recorded forward does not run.
#ifndef SEMMAP_SRC_MAPPING_STEPS_FIT_SIGNATURES_H_
#define SEMMAP_SRC_MAPPING_STEPS_FIT_SIGNATURES_H_

#include <cstddef>
#include <string>

#include "absl/types/span.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// What the scoped nodes' op types say of the manifest's forward signatures.
struct OpConflicts {
  std::size_t checked = 0;     // scoped nodes of a checked op type in a traced module
  std::size_t unexplained = 0; // of them, run by no operation of the module's forward
  std::size_t modules = 0;     // distinct modules of those
  std::string first;
};

// A node whose scope names a module with a recorded forward (schema 2)
// should be the export of one of that forward's own operations. Only op
// types the rules name ("signature_checked_ops") are judged: glue (shape
// arithmetic, casts) is not recorded, and tools fuse the rest.
OpConflicts CheckSignatureOps(const Graph& graph, absl::Span<const ModuleId> node_modules,
                              const Manifest& manifest, const Rules& rules);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_FIT_SIGNATURES_H_
