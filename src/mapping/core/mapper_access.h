// MapperAccess: the library's way into a SemanticMapper's records.
//
// mapper.h hands out a public Mapping per node, assembled on access from a
// compact record and the manifest (the module's path, classes and
// category). Writers that need only a node's module, confidence and
// strategy, for every node of a large graph, read the records here instead.
#ifndef SEMMAP_SRC_MAPPING_CORE_MAPPER_ACCESS_H_
#define SEMMAP_SRC_MAPPING_CORE_MAPPER_ACCESS_H_

#include "absl/types/span.h"
#include "base/phase_times.h"
#include "mapping/core/mapping_record.h"

namespace semmap {

// Declared, not included: the facade's header is a layer above the records
// (cmake/check_layers.cmake). Records() is defined in mapping/mapper.cc.
class SemanticMapper;

namespace internal {

struct MapperAccess {
  // One record per node, indexed like Graph::nodes(); valid while the
  // mapper lives. A record holds exactly the module, confidence, strategy
  // and evidence of the node's Mapping.
  static absl::Span<const MappingRecord> Records(const SemanticMapper& mapper);
  // The phases of its making, in the order they ended (base/phase_times.h):
  // Open()'s reads, the record's checks, then the pipeline's steps (a
  // reference's own mapping prefixed "reference: "). Side-by-side phases
  // overlap.
  static const PhaseTimes& Phases(const SemanticMapper& mapper);
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_MAPPER_ACCESS_H_
