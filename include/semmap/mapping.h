// Mapping: the answer semmap gives for one ONNX node.
#ifndef SEMMAP_INCLUDE_SEMMAP_MAPPING_H_
#define SEMMAP_INCLUDE_SEMMAP_MAPPING_H_

#include <array>
#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "semmap/manifest.h"

namespace semmap {

// How a node's module was found. The numeric values and the names returned
// by StrategyName() are stable: tools print them and files store them.
enum class Strategy : std::uint8_t {
  kUnmapped = 0,          // nothing found; confidence 0
  kExactScope = 1,        // every scope segment of the node name resolved
  kExporterMetadata = 2,  // the dynamo exporter's module stack in the node's
                          // metadata_props resolved
  kScopePrefix = 3,       // a leading part of the scope (name or metadata)
                          // resolved; the rest is unknown to the manifest
  kNeighbourhood = 4,     // no usable scope: inferred from neighbours
};
inline constexpr std::size_t kStrategyCount = 5;

// "unmapped", "exact_scope", "exporter_metadata", "scope_prefix",
// "neighbourhood".
absl::string_view StrategyName(Strategy s);
// Inverse of StrategyName; false when `name` is unknown.
bool ParseStrategy(absl::string_view name, Strategy* out);

struct Mapping {
  ModuleId module = kNoModule;
  // Views into the mapper's manifest: valid while the SemanticMapper that
  // produced this Mapping lives. Empty when unmapped; class names are empty
  // when mapping without a manifest.
  absl::string_view module_path;
  absl::string_view class_name;
  absl::string_view qualified_class;
  // In [0, 1]: how sure the strategy is. 0 exactly when unmapped.
  double confidence = 0.0;
  Strategy strategy = Strategy::kUnmapped;
  // Short human-readable reason ("scope /encoder/layer.0/... resolved").
  std::string evidence;

  bool mapped() const { return module != kNoModule; }
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_MAPPING_H_
