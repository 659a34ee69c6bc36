// MappingRecord: what the mapper stores per node while it maps and after,
// 32 bytes instead of the 96 of a public Mapping. The module's path,
// classes and category are not stored: SemanticMapper assembles a Mapping
// from the record and the manifest on access (mapper.h).
#ifndef SEMMAP_SRC_MAPPING_CORE_MAPPING_RECORD_H_
#define SEMMAP_SRC_MAPPING_CORE_MAPPING_RECORD_H_

#include "absl/strings/string_view.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"

namespace semmap {
namespace internal {

struct MappingRecord {
  // A view into the mapper's EvidenceStore, or a literal.
  absl::string_view evidence;
  double confidence = 0.0;
  ModuleId module = kNoModule;
  Strategy strategy = Strategy::kUnmapped;

  bool mapped() const { return module != kNoModule; }
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_MAPPING_RECORD_H_
