// Strategy: how a node's module was found (a Mapping's strategy, and the
// key of a rule file's calibration). A vocabulary type of its own, below the
// mapping, so that rule files can name strategies.
#ifndef SEMMAP_INCLUDE_SEMMAP_STRATEGY_H_
#define SEMMAP_INCLUDE_SEMMAP_STRATEGY_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "semmap/export.h"

namespace semmap {

// How a node's module was found, one X(enumerator, value, name) per
// strategy in numeric order: the one list that Strategy, kStrategyCount and
// StrategyName() are expanded from here, and that the Python package's
// semmap.Strategy and its type stub are checked against (ctest
// strategy_names). The numeric values and the names are stable: tools
// print them and files store them. A new strategy is a new last line.
#define SEMMAP_STRATEGIES(X)                                                  \
  /* nothing found; confidence 0 */                                           \
  X(kUnmapped, 0, "unmapped")                                                 \
  /* every scope segment of the node name resolved */                         \
  X(kExactScope, 1, "exact_scope")                                            \
  /* the dynamo exporter's module stack in the node's metadata_props */       \
  /* resolved */                                                              \
  X(kExporterMetadata, 2, "exporter_metadata")                                \
  /* names of the values the node reads or writes: parameters it reads or */  \
  /* produces, scoped output names kept by fused/rewritten nodes */           \
  X(kTensorNames, 3, "tensor_names")                                          \
  /* a leading part of the scope (name or metadata) resolved; the rest is */  \
  /* unknown to the manifest */                                               \
  X(kScopePrefix, 4, "scope_prefix")                                          \
  /* an op-type rule of the rule file (e.g. quantize and cast nodes belong */ \
  /* with their consumers) */                                                 \
  X(kOpRule, 5, "op_rule")                                                    \
  /* inferred from producers and consumers */                                 \
  X(kNeighbourhood, 6, "neighbourhood")                                       \
  /* inferred from the graph's structure for nodes without names or */        \
  /* metadata: execution order between weight-anchored nodes, the */          \
  /* manifest's module order, repeated layers */                              \
  X(kStructure, 7, "structure")                                               \
  /* carried over from the unprocessed export the file came from */           \
  /* (MapperOptions::reference) */                                            \
  X(kReference, 8, "reference")

#define SEMMAP_STRATEGY_ENUMERATOR_(enumerator, value, name) enumerator = value,
enum class Strategy : std::uint8_t { SEMMAP_STRATEGIES(SEMMAP_STRATEGY_ENUMERATOR_) };
#undef SEMMAP_STRATEGY_ENUMERATOR_

#define SEMMAP_STRATEGY_ONE_(enumerator, value, name) +1
inline constexpr std::size_t kStrategyCount = 0 SEMMAP_STRATEGIES(SEMMAP_STRATEGY_ONE_);
#undef SEMMAP_STRATEGY_ONE_

// The name SEMMAP_STRATEGIES gives `s` ("exact_scope" for kExactScope);
// "invalid" for a value outside the list.
SEMMAP_EXPORT absl::string_view StrategyName(Strategy s);
// Inverse of StrategyName; false when `name` is unknown.
SEMMAP_EXPORT bool ParseStrategy(absl::string_view name, Strategy* out);

// Confidence at and above which an answer counts as confident. Measured on
// the fixture corpus (every toolchain, exporter and pipeline, held-out
// architectures included): no answer at or above it has been wrong; below
// it, about one in eight is (docs/mapping.md, "Confidence").
inline constexpr double kConfidentFloor = 0.9;

// True for the strategies that infer an answer rather than read it from
// the node's own scope or metadata or carry it from a reference:
// kTensorNames, kScopePrefix, kOpRule, kNeighbourhood, kStructure. Their
// answers measurably fail, so they stay below kConfidentFloor (above)
// whatever a rule file's calibration says: a table that would report
// them at or above it is refused.
SEMMAP_EXPORT bool IsInferred(Strategy s);

// What a graph's names and ops leave to inference, as the mapper reads it:
// the rule file's calibration may differ per kind (docs/rules.md). The
// numeric values and GraphKindName()'s names are stable.
enum class GraphKind : std::uint8_t {
  kNamed = 0,      // scopes or exporter metadata name at least a tenth of
                   // the nodes (plain exports, copies that kept the names)
  kUnnamed = 1,    // they name fewer: names stripped, or metadata dropped
                   // by a tool (a dynamo export after onnxslim or ONNX
                   // Runtime)
  kQuantized = 2,  // a quantizer's ops (rules "quantized_ops") in the graph
};
inline constexpr std::size_t kGraphKindCount = 3;

// "named", "unnamed", "quantized".
SEMMAP_EXPORT absl::string_view GraphKindName(GraphKind kind);
// Inverse of GraphKindName; false when `name` is unknown.
SEMMAP_EXPORT bool ParseGraphKind(absl::string_view name, GraphKind* out);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_STRATEGY_H_
