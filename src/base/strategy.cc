#include "semmap/strategy.h"

namespace semmap {
namespace {

constexpr absl::string_view kStrategyNames[kStrategyCount] = {
    "unmapped",     "exact_scope", "exporter_metadata", "tensor_names",
    "scope_prefix", "op_rule",     "neighbourhood",     "structure",
    "reference"};

constexpr absl::string_view kGraphKindNames[kGraphKindCount] = {"named", "unnamed", "quantized"};

}  // namespace

absl::string_view GraphKindName(GraphKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kGraphKindCount ? kGraphKindNames[i] : "invalid";
}

bool ParseGraphKind(absl::string_view name, GraphKind* out) {
  for (std::size_t i = 0; i < kGraphKindCount; ++i) {
    if (kGraphKindNames[i] == name) {
      *out = static_cast<GraphKind>(i);
      return true;
    }
  }
  return false;
}

absl::string_view StrategyName(Strategy s) {
  const auto index = static_cast<std::size_t>(s);
  return index < kStrategyCount ? kStrategyNames[index] : "invalid";
}

bool ParseStrategy(absl::string_view name, Strategy* out) {
  for (std::size_t i = 0; i < kStrategyCount; ++i) {
    if (kStrategyNames[i] == name) {
      *out = static_cast<Strategy>(i);
      return true;
    }
  }
  return false;
}

bool IsInferred(Strategy s) {
  switch (s) {
    case Strategy::kTensorNames:
    case Strategy::kScopePrefix:
    case Strategy::kOpRule:
    case Strategy::kNeighbourhood:
    case Strategy::kStructure:
      return true;
    default:
      return false;
  }
}

}  // namespace semmap
