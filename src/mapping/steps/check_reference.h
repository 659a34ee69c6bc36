// Is the reference the export the processed file came from? The check
// made before a reference export (MapperOptions::reference) or a record's
// copy of one is used: shared initializer names and shapes (CheckSameModel),
// then whether R can be P's ancestor (CheckReference). See
// docs/mapping.md; the public result is semmap/reference_check.h.
#ifndef SEMMAP_SRC_MAPPING_STEPS_CHECK_REFERENCE_H_
#define SEMMAP_SRC_MAPPING_STEPS_CHECK_REFERENCE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "semmap/graph.h"
#include "semmap/reference_check.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// What the two files share. Names are compared as written and, for the
// processed file, without the value-name suffixes of the rules
// (quantization's "<weight>_quantized", "_scale", "_zero_point").
// Initializers of P named after values R computes (constants folded by
// onnxslim: "/m/Constant_output_0", "/m/Unsqueeze_output_0_axes") are not
// counted.
struct ReferenceEvidence {
  bool by_initializers = true;     // false: graph input/output names compared
  std::size_t reference_names = 0;  // distinct names of R compared
  std::size_t found = 0;            // of those, present in P
  std::size_t processed_names = 0;  // distinct names of P compared
  std::size_t known = 0;            // of those, names (or renamings) of R
  std::size_t shape_mismatches = 0; // same name, both shapes known, different
  std::string first_mismatch;       // "<name> [2,3] vs [3,2]"
  // When no name is shared (a tool renamed every initializer): the weights
  // of two or more dimensions of each graph, and of those, how many have a
  // weight of the same dims in the other (as multisets).
  std::size_t reference_weights = 0, reference_weights_paired = 0;
  std::size_t processed_weights = 0, processed_weights_paired = 0;
};

ReferenceEvidence CompareNames(const Graph& processed, const Graph& reference,
                               const Rules& rules);

// OK when `reference` can be the unprocessed export of `processed`:
// at least half of R's initializers are found in P, at least half of P's
// are R's (fusion adds a few), and at most 1 in 20 shared names differ in
// shape. Graphs without initializers are judged by their graph input and
// output names instead; graphs that share no initializer name at all (a tool
// renamed every one) by their weights' shapes: nine in ten of either
// graph's weights of two or more dimensions have one of the same dims in
// the other. Otherwise InvalidArgument stating the evidence ("shares 3 of
// 120 initializers"); the caller adds the file names.
absl::Status CheckSameModel(const Graph& processed, const Graph& reference,
                            const Rules& rules);

// How a graph's nodes name their modules (ReferenceCheck's namings and
// scope counts): what the check weighs of each graph.
struct GraphNaming {
  NodeNaming scheme = NodeNaming::kNone;
  std::size_t scopes = 0;  // distinct scopes named by node names or metadata
};
GraphNaming NamingOf(const Graph& graph);

// CheckSameModel, then whether R can be P's ancestor (reference_check.h):
// the same graph, the other exporter's naming, fewer named nodes; each
// finding worded as a warning. `reference_naming`, when given, is R's
// naming as measured on the export itself (a record's copy of R keeps no
// metadata).
absl::StatusOr<ReferenceCheck> CheckReference(const Graph& processed, const Graph& reference,
                                              const Rules& rules,
                                              const GraphNaming* reference_naming = nullptr);

// Records in `check` that `paired` of the model's `nodes` nodes pair with
// the reference, with a warning when too few do for it to be their source.
void NotePairing(std::size_t paired, std::size_t nodes, ReferenceCheck* check);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_CHECK_REFERENCE_H_
