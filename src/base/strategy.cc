#include "semmap/strategy.h"

namespace semmap {
namespace {

#define SEMMAP_STRATEGY_NAME_(enumerator, value, name) name,
constexpr absl::string_view kStrategyNames[kStrategyCount] = {
    SEMMAP_STRATEGIES(SEMMAP_STRATEGY_NAME_)};
#undef SEMMAP_STRATEGY_NAME_

// StrategyName() indexes kStrategyNames by value: the list must number its
// strategies 0, 1, 2, ... in order.
constexpr bool StrategiesNumberedInOrder() {
  std::size_t index = 0;
  bool in_order = true;
#define SEMMAP_STRATEGY_AT_(enumerator, value, name) \
  in_order = in_order && static_cast<std::size_t>(Strategy::enumerator) == index++;
  SEMMAP_STRATEGIES(SEMMAP_STRATEGY_AT_)
#undef SEMMAP_STRATEGY_AT_
  return in_order && index == kStrategyCount;
}
static_assert(StrategiesNumberedInOrder(), "SEMMAP_STRATEGIES must number 0, 1, 2, ... in order");

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
