#include "semmap/strategy.h"

namespace semmap {
namespace {

constexpr absl::string_view kStrategyNames[kStrategyCount] = {
    "unmapped",     "exact_scope", "exporter_metadata", "tensor_names",
    "scope_prefix", "op_rule",     "neighbourhood",     "structure",
    "reference"};

}  // namespace

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
