// The manifest fit check's evidence from forward signatures (schema 2):
// scoped nodes of a kind their module's recorded forward does not run, and
// folds of modules no exporter folds.
#ifndef SEMMAP_SRC_MAPPING_STEPS_FIT_SIGNATURES_H_
#define SEMMAP_SRC_MAPPING_STEPS_FIT_SIGNATURES_H_

#include <cstddef>
#include <string>

#include "absl/types/span.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "mapping/core/op_traits.h"
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

// What the graph's folds say of the modules the manifest's forward calls.
struct FoldConflicts {
  std::size_t folds = 0;      // modules whose nodes read a bias the module has not
  std::size_t conflicts = 0;  // of them, followed by a module no exporter folds, without node
  std::string first;
};

// A module whose own operations read parameters, none a vector, but whose
// scoped nodes read a vector float initializer, had one folded into it (a
// Conv that gained a bias). The module its parent calls next, right after
// it, is the one folded: when that module has no node of its own and
// normalises with its parameters (rules "signature_checked_ops"), the
// normalisation must be of a kind exporters fold (rules "folded_ops"); a
// group normalisation there says the manifest is a twin's. Graphs with
// quantizer nodes or nodes of another domain than ONNX's are not judged.
FoldConflicts CheckFolds(const Graph& graph, absl::Span<const ModuleId> node_modules,
                         const Manifest& manifest, const Rules& rules, const OpTraits& ops);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_FIT_SIGNATURES_H_
