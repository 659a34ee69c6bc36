#include "semmap/strategy.h"

namespace semmap {
namespace {

constexpr absl::string_view kStrategyNames[kStrategyCount] = {
    "unmapped",     "exact_scope", "exporter_metadata", "tensor_names",
    "scope_prefix", "op_rule",     "neighbourhood",     "structure",
    "reference"};

constexpr absl::string_view kGraphKindNames[kGraphKindCount] = {"named", "unnamed", "quantized"};

// An enum's stable name by its numeric value, and back.
template <typename Enum, std::size_t N>
absl::string_view NameOf(const absl::string_view (&names)[N], Enum value) {
  const auto index = static_cast<std::size_t>(value);
  return index < N ? names[index] : "invalid";
}

template <typename Enum, std::size_t N>
bool ValueOf(const absl::string_view (&names)[N], absl::string_view name, Enum* out) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) {
      *out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

absl::string_view GraphKindName(GraphKind kind) { return NameOf(kGraphKindNames, kind); }

bool ParseGraphKind(absl::string_view name, GraphKind* out) {
  return ValueOf(kGraphKindNames, name, out);
}

absl::string_view StrategyName(Strategy s) { return NameOf(kStrategyNames, s); }

bool ParseStrategy(absl::string_view name, Strategy* out) {
  return ValueOf(kStrategyNames, name, out);
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
