#include "mapping/core/fusion.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace semmap {
namespace internal {
namespace {

bool StartsWord(absl::string_view s, std::size_t i) {
  return i == 0 || absl::ascii_isupper(static_cast<unsigned char>(s[i]));
}

}  // namespace

std::size_t OpTypeOverlap(absl::string_view fused, absl::string_view part) {
  if (part.empty() || part.size() > fused.size()) return 0;
  for (std::size_t i = fused.find(part); i != absl::string_view::npos;
       i = fused.find(part, i + 1)) {
    const std::size_t end = i + part.size();
    if (StartsWord(fused, i) && (end == fused.size() || StartsWord(fused, end))) {
      return part.size();
    }
  }
  return 0;
}

ModuleId DominantModule(absl::string_view op_type, absl::Span<const FusedPart> parts,
                        absl::Span<const ModuleId> weight_owners, const Manifest& manifest) {
  std::size_t best = 0;
  for (const FusedPart& p : parts) {
    if (p.module != kNoModule) best = std::max(best, OpTypeOverlap(op_type, p.op_type));
  }
  if (best == 0) return kNoModule;
  ModuleId dominant = kNoModule;
  for (const FusedPart& p : parts) {
    if (p.module == kNoModule || OpTypeOverlap(op_type, p.op_type) != best) continue;
    if (dominant != kNoModule && dominant != p.module) return kNoModule;  // two modules' parts
    dominant = p.module;
  }
  for (ModuleId owner : weight_owners) {
    if (owner != kNoModule && !manifest.isAncestorOrSelf(dominant, owner)) return kNoModule;
  }
  return dominant;
}

}  // namespace internal
}  // namespace semmap
