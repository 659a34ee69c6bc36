// What the mapping's steps and strategies share once the manifest and the
// root binding are settled (mapper.cc builds it): the inputs they read and
// the three tables they write. Every step after the scope steps takes it
// whole, in place of the graph, the manifest, the rules, the op traits,
// the tensor index and the tables one by one; none keeps it.
#ifndef SEMMAP_SRC_MAPPING_CORE_MAPPING_CONTEXT_H_
#define SEMMAP_SRC_MAPPING_CORE_MAPPING_CONTEXT_H_

#include <vector>

#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/origin_table.h"
#include "mapping/core/tensor_evidence.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

struct MappingContext {
  const Graph& graph;
  const Manifest& manifest;  // the named one, or the one derived from the scopes
  const Rules& rules;
  const OpTraits& ops;            // per node of `graph`
  const TensorEvidence& tensors;  // value names under the root binding
  // Written by the steps, one entry per node of `graph`.
  std::vector<MappingRecord>& records;
  EvidenceStore& evidence;  // what the records' evidence points into
  OriginTable& origins;     // of the nodes that do several modules' work
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_MAPPING_CONTEXT_H_
