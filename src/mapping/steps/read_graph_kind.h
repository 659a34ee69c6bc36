// The graph's kind (GraphKind, strategy.h): what its names and ops leave to
// inference, read once the name steps have answered. The rule file may
// calibrate each kind's confidences apart (docs/rules.md).
#ifndef SEMMAP_SRC_MAPPING_STEPS_READ_GRAPH_KIND_H_
#define SEMMAP_SRC_MAPPING_STEPS_READ_GRAPH_KIND_H_

#include <vector>

#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "semmap/strategy.h"

namespace semmap {
namespace internal {

// kQuantized when a node runs a quantizer's op (rules "quantized_ops");
// else kNamed when the name steps (scopes, exporter metadata) answered at
// least a tenth of the nodes; else kUnnamed.
GraphKind ReadGraphKind(const OpTraits& ops, const std::vector<MappingRecord>& records);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_READ_GRAPH_KIND_H_
