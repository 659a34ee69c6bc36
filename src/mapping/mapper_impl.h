// SemanticMapper's state (semmap/mapper.h), shared by the facade's two
// sources: mapper.cc (opening, the pipeline, access) and mapper_record.cc
// (the verdicts on a provenance record).
#ifndef SEMMAP_SRC_MAPPING_MAPPER_IMPL_H_
#define SEMMAP_SRC_MAPPING_MAPPER_IMPL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/phase_times.h"
#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/origin_table.h"
#include "mapping/steps/check_record_answers.h"
#include "semmap/mapper.h"

namespace semmap {

// What a mapper holds. Mappings are assembled from `records` on access.
struct SemanticMapper::Impl {
  explicit Impl(Graph g) : graph(std::move(g)) {}

  Graph graph;
  std::shared_ptr<const Manifest> manifest;
  bool has_manifest = false;
  RootBinding binding;
  ManifestFit fit;
  GraphKind kind = GraphKind::kNamed;
  ReferenceCheck reference_check;
  internal::RecordAnswerCheck record_answers;  // a record's, against the graph's own
  Provenance provenance;
  std::vector<internal::MappingRecord> records;  // one per node
  internal::EvidenceStore evidence;               // what records point into
  internal::OriginTable origins;                  // of the nodes that are fusions
  std::vector<std::string> categories;            // per manifest module
  const Rules* rules = nullptr;                   // what it mapped with
  std::shared_ptr<const Rules> owned_rules;       // when Open() loaded them
  internal::PhaseTimes phases;                    // of its making (MapperAccess::Phases)
};

}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_MAPPER_IMPL_H_
