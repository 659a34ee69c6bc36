// Reference transfer: carrying the mapping of an unprocessed export over to
// a post-processed copy of it (onnxslim, ONNX Runtime's optimizers,
// quantize_dynamic, name stripping), whose nodes lost the exporter's names
// or metadata. See MapperOptions::reference and docs/mapping.md.
//
// Linear in the size of the two graphs: MatchToReference pairs each node
// of the processed graph (P) with the reference (R) nodes it stands for,
// and TransferFromReference turns the pairs into mappings. Whether R is
// P's source at all is checked before (steps/check_reference.h).
#ifndef SEMMAP_SRC_MAPPING_STRATEGIES_REFERENCE_TRANSFER_H_
#define SEMMAP_SRC_MAPPING_STRATEGIES_REFERENCE_TRANSFER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_context.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/origin_table.h"
#include "mapping/core/tensor_evidence.h"
#include "mapping/strategies/reference_match.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"
#include "semmap/reference_check.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// Counts per MatchRule of the transfer, for tests and reports.
struct TransferStats {
  std::size_t by_rule[6] = {};
  std::size_t consumers = 0;  // data-movement nodes that followed consumers
  std::size_t transferred = 0;
};

// Fills the context's records (indexed like processed.nodes(); module, confidence,
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
// What the transfer reads of the reference beside the context (the
// processed graph's: its tensor index, its records and origins, written).
struct TransferContext {
  const std::vector<MappingRecord>* reference_mappings = nullptr;
  const OriginTable* reference_origins = nullptr;
  // With a check, the pairing is also recorded there (NotePairing).
  ReferenceCheck* check = nullptr;
  // The pairing, when the caller made it already (MatchToReference of the
  // processed graph and `reference` with the limits passed); else it is
  // made here.
  const std::vector<NodeMatch>* matches = nullptr;
};
TransferStats TransferFromReference(const MappingContext& context, const Graph& reference,
                                    const TransferContext& transfer, const MatchLimits& limits = {});

// Per node of the processed graph, what the reference's answers say of
// it: the answer of a reference node it pairs with that is `own`'s answer
// for it (a fusion pairs with several: the file may name any one part),
// else the lowest common ancestor of their answers; kNoModule where it
// pairs with none or none is answered. What a record's answers are judged
// by (steps/check_record_answers.h) before they are carried over.
std::vector<ModuleId> PairedAnswers(const std::vector<NodeMatch>& matches,
                                    const std::vector<MappingRecord>& reference_mappings,
                                    const std::vector<MappingRecord>& own,
                                    const Manifest& manifest);

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
