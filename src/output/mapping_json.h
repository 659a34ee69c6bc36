// One node's mapping as a JSON object, written the same way by the results
// (semmap/results_json.h: MappingJson, node lists) and the sidecar.
#ifndef SEMMAP_SRC_OUTPUT_MAPPING_JSON_H_
#define SEMMAP_SRC_OUTPUT_MAPPING_JSON_H_

#include "io/json_writer.h"
#include "semmap/mapper.h"

namespace semmap {
namespace internal {

enum class MappingJsonForm {
  kResult,   // the node's id under "node"
  kSidecar,  // the node's id under "id", and its "subgraph"
};

// {"category", "class", "confidence", "domain", "evidence", "module" (null
// when unmapped), "name", "op_type", "origins" (only for a node doing
// several modules' work), "qualified_class", "strategy"} and the id as
// `form` says, keys in sorted order.
void WriteMappingObject(JsonWriter& w, const SemanticMapper& mapper, NodeId id,
                        MappingJsonForm form);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_OUTPUT_MAPPING_JSON_H_
