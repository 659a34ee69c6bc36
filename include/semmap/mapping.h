// Mapping: the answer semmap gives for one ONNX node.
#ifndef SEMMAP_INCLUDE_SEMMAP_MAPPING_H_
#define SEMMAP_INCLUDE_SEMMAP_MAPPING_H_

#include <array>
#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/manifest.h"

namespace semmap {

// How a node's module was found. The numeric values and the names returned
// by StrategyName() are stable: tools print them and files store them.
enum class Strategy : std::uint8_t {
  kUnmapped = 0,          // nothing found; confidence 0
  kExactScope = 1,        // every scope segment of the node name resolved
  kExporterMetadata = 2,  // the dynamo exporter's module stack in the node's
                          // metadata_props resolved
  kTensorNames = 3,       // names of the values the node reads or writes:
                          // parameters it reads or produces, scoped output
                          // names kept by fused/rewritten nodes
  kScopePrefix = 4,       // a leading part of the scope (name or metadata)
                          // resolved; the rest is unknown to the manifest
  kOpRule = 5,            // an op-type rule of the rule file (e.g. quantize
                          // and cast nodes belong with their consumers)
  kNeighbourhood = 6,     // inferred from producers and consumers
  kStructure = 7,         // inferred from the graph's structure for nodes
                          // without names or metadata: execution order
                          // between weight-anchored nodes, the manifest's
                          // module order, repeated layers
  kReference = 8,         // carried over from the unprocessed export the
                          // file came from (MapperOptions::reference)
};
inline constexpr std::size_t kStrategyCount = 9;

// "unmapped", "exact_scope", "exporter_metadata", "tensor_names",
// "scope_prefix", "op_rule", "neighbourhood", "structure", "reference".
SEMMAP_EXPORT absl::string_view StrategyName(Strategy s);
// Inverse of StrategyName; false when `name` is unknown.
SEMMAP_EXPORT bool ParseStrategy(absl::string_view name, Strategy* out);

// Confidence at and above which an answer counts as confident. Measured on
// the fixture corpus (every toolchain, exporter and pipeline, held-out
// architectures included): no answer at or above it has been wrong; below
// it, about one in eight is (docs/mapping.md, "Confidence").
inline constexpr double kConfidentFloor = 0.9;

struct SEMMAP_EXPORT Mapping {
  ModuleId module = kNoModule;
  // Views into the mapper's manifest: valid while the SemanticMapper that
  // produced this Mapping lives. Empty when unmapped; class names are empty
  // when mapping without a manifest.
  absl::string_view module_path;
  absl::string_view class_name;
  absl::string_view qualified_class;
  // The module's semantic category from the rule file ("attention",
  // "projection", "normalization", ...); empty when no rule matches.
  absl::string_view category;
  // In [0, 1]: how sure the strategy is. 0 exactly when unmapped.
  double confidence = 0.0;
  Strategy strategy = Strategy::kUnmapped;
  // Short human-readable reason ("scope /encoder/layer.0/... resolved"). A
  // view into the mapper's store, valid while the SemanticMapper lives.
  absl::string_view evidence;

  bool mapped() const { return module != kNoModule; }
  // mapped() with confidence >= kConfidentFloor.
  bool confident() const { return mapped() && confidence >= kConfidentFloor; }
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_MAPPING_H_
