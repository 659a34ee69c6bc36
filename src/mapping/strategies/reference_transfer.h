// Reference transfer: carrying the mapping of an unprocessed export over to
// a post-processed copy of it (onnxslim, ONNX Runtime's optimizers,
// quantize_dynamic, name stripping), whose nodes lost the exporter's names
// or metadata. See MapperOptions::reference and docs/mapping.md.
//
// Two steps, both linear in the size of the two graphs:
//  - CheckSameModel refuses a reference that is not the export the
//    processed file came from, judged by initializer names and shapes;
//  - MatchToReference pairs each node of the processed graph (P) with the
//    reference (R) nodes it stands for, and TransferFromReference turns the
//    pairs into mappings.
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_REFERENCE_TRANSFER_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_REFERENCE_TRANSFER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mapping/evidence_store.h"
#include "mapping/mapping_record.h"
#include "mapping/origin_table.h"
#include "mapping/strategies/tensor_evidence.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"
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
};

ReferenceEvidence CompareNames(const Graph& processed, const Graph& reference,
                               const Rules& rules);

// OK when `reference` can be the unprocessed export of `processed`:
// at least half of R's initializers are found in P, at least half of P's
// are R's (fusion adds a few), and at most 1 in 20 shared names differ in
// shape. Graphs without initializers are judged by their graph input and
// output names instead. Otherwise InvalidArgument stating the evidence
// ("shares 3 of 120 initializers"); the caller adds the file names.
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

// How a node of P was paired with R, strongest first.
enum class MatchRule : std::uint8_t {
  kNone = 0,
  kSameName,     // same node name and op type
  kStructure,    // same op type reading the same (matched) values
  kConstantOf,   // a Constant feeding a matched node at the position where
                 // R's counterpart reads a Constant
  kSpan,         // writes values of R: the R nodes between its matched
                 // inputs and those outputs (fused nodes)
  kDerivedName,  // name extends an R node name ("<node>_quant")
};

struct NodeMatch {
  MatchRule rule = MatchRule::kNone;
  // kSameName, kStructure, kConstantOf, kDerivedName: one R node.
  // kSpan: the R nodes replaced.
  std::vector<NodeId> reference_nodes;
  // kStructure: more than one R node had the same signature and the pairing
  // followed node order.
  bool ambiguous = false;
};

struct MatchLimits {
  // Passes of structural numbering (each linear in P).
  int max_structure_passes = 32;
  // R nodes visited when collecting one fused node's span (and 4 times as
  // many consumer edges); a larger span falls back to the producers of its
  // outputs.
  std::size_t max_span_nodes = 2048;
  // All spans of one match together visit at most this many R nodes and
  // edges per node and input edge of R (plus kSpanWorkFloor): the work and
  // the spans kept stay linear in the files whatever their shape. A span
  // found after that falls back to the producers of its outputs.
  std::size_t span_work_per_reference_item = 8;
};

// The span work every match may do whatever the size of R.
inline constexpr std::size_t kSpanWorkFloor = std::size_t{1} << 16;

// One NodeMatch per node of P. Only P's main graph is matched by structure
// and spans; nodes of subgraph bodies match by name.
std::vector<NodeMatch> MatchToReference(const Graph& processed, const Graph& reference,
                                        const Rules& rules, const MatchLimits& limits = {});

// Counts per MatchRule of the transfer, for tests and reports.
struct TransferStats {
  std::size_t by_rule[6] = {};
  std::size_t consumers = 0;  // data-movement nodes that followed consumers
  std::size_t transferred = 0;
};

// Fills `mappings` (indexed like processed.nodes(); module, confidence,
// strategy kReference and evidence) from `reference_mappings` (indexed like
// reference.nodes(), module ids of `manifest`). Entries mapped by
// kExactScope or kExporterMetadata are kept; a kScopePrefix entry is
// replaced when the transfer is more confident; the others are filled where
// a match exists. Finally, unmapped data-movement nodes (the rules'
// follow-consumers and weight-passthrough ops) take the lowest common
// ancestor of their consumers when every consumer is mapped.
// A node that replaced reference nodes of several modules (a fusion) gets
// them, with their own origins, as its origins, and the module of the part
// that dominates it (fused_nodes.h) when one does, else their lowest
// common ancestor; a node standing for one reference node keeps that
// node's origins.
struct TransferContext {
  const std::vector<MappingRecord>* reference_mappings = nullptr;
  const OriginTable* reference_origins = nullptr;
  const TensorEvidence* tensors = nullptr;  // parameter owners in P
  OriginTable* origins = nullptr;           // P's, filled
  // With a check, the pairing is also recorded there (NotePairing).
  ReferenceCheck* check = nullptr;
};
TransferStats TransferFromReference(const Graph& processed, const Graph& reference,
                                    const TransferContext& context, const Manifest& manifest,
                                    const Rules& rules, std::vector<MappingRecord>* mappings,
                                    EvidenceStore* evidence, const MatchLimits& limits = {});

// Records in `check` that `paired` of the model's `nodes` nodes pair with
// the reference, with a warning when too few do for it to be their source.
void NotePairing(std::size_t paired, std::size_t nodes, ReferenceCheck* check);

// After the transfer and the inference: a carried-over answer (strategy
// kReference) gives way to the answer P gives on its own (`own`, indexed
// like processed.nodes(), module ids of `own_manifest`; the module found
// in `manifest` by its path) when that is at least as confident and, with
// a reference that looks like P's source (`ancestor`), confident
// (kConfidentFloor); a node without an answer takes its own. Answers the
// inference made in `mappings` stay (they may build on carried-over
// neighbours) unless less confident than a confident own answer: a
// confident own answer is never replaced by a less confident one. (Against a true source, P's own guesses at the same
// confidence are wrong more often than the carried-over answers: taking
// every own answer at least as confident, whatever its strategy, cost
// the corpus's CNNs up to 70 % of their correct answers after ONNX
// Runtime or quantization.) Returns how many answers changed.
std::size_t KeepOwnAnswers(const std::vector<MappingRecord>& own, const Manifest& own_manifest,
                           const Manifest& manifest, bool ancestor,
                           std::vector<MappingRecord>* mappings, EvidenceStore* evidence);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STRATEGIES_REFERENCE_TRANSFER_H_
