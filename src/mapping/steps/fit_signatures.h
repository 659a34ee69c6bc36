// The manifest fit check's evidence from forward signatures (schema 2):
// scoped nodes of a kind their module's recorded forward does not run, and
// modules whose nodes read fewer weights than their forward reads parameters.
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

// What the scoped nodes' weight inputs say of the parameters the manifest's
// forward signatures read.
struct ReadShortfalls {
  std::size_t judged = 0;    // modules with scoped nodes whose own ops read vector parameters
  std::size_t short_of = 0;  // of them, with one their nodes read no weight of the size of
  std::string first;
};

// A vector (1-D) parameter a module's recorded forward reads in its own
// operations should be read by the module's scoped nodes: some initializer
// of its element count, seen through nodes computing only from initializers
// (a cast, an unsqueeze, an Identity of a de-duplicated tensor). A module
// without one says the manifest's model has a parameter the graph's lacks
// (a sibling adding biases). Matrices are not judged (an exporter folds a
// weight computed from several parameters into one tensor), nor modules
// without scoped nodes (folded by the exporter), nor graphs holding
// quantizer nodes or nodes of another domain than ONNX's: those tools move
// a bias into a node of their own, under another name.
ReadShortfalls CheckParameterReads(const Graph& graph, absl::Span<const ModuleId> node_modules,
                                   const Manifest& manifest, const OpTraits& ops);

// What the graph's folds say of the modules the manifest's forward calls.
struct FoldConflicts {
  std::size_t folds = 0;      // modules whose nodes read a bias the module has not
  std::size_t conflicts = 0;  // of them, followed by a module no exporter folds, without node
  std::string first;
};

// A module whose own operations read no vector parameter, but whose
// scoped nodes read a vector weight, had one folded into it (a Conv that
// gained a bias). The module its parent calls next, right after it, is the
// one folded: when that module has no node of its own, its own operations
// reading parameters must be ones exporters fold (rules "folded_ops");
// a group normalisation there says the manifest is a twin's. Graphs with
// quantizer nodes or nodes of another domain than ONNX's are not judged.
FoldConflicts CheckFolds(const Graph& graph, absl::Span<const ModuleId> node_modules,
                         const Manifest& manifest, const Rules& rules, const OpTraits& ops);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_FIT_SIGNATURES_H_
