#include "internal/scope_resolver.h"

#include "absl/strings/str_cat.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {

ModuleId ScopeResolver::Step(ModuleId parent, absl::string_view segment,
                             bool* ambiguous, bool* indirect) const {
  const ModuleInfo& p = manifest_.module(parent);
  // The common case: the segment is the child's own attribute name, or a
  // ModuleList child ("layer.0") right under the module that called it.
  const ModuleId direct = manifest_.find(
      p.path.empty() ? std::string(segment) : absl::StrCat(p.path, ".", segment));
  if (direct != kNoModule) return direct;
  *indirect = true;
  // Otherwise a descendant with that variable name: a called container
  // repeating its name ("layer1" then "layer1.0"), or a module called by an
  // ancestor of its parent. The shallowest such descendant wins.
  ModuleId best = kNoModule;
  int best_depth = 0;
  for (ModuleId c : manifest_.withVariableName(segment)) {
    if (c == parent || !manifest_.isAncestorOrSelf(parent, c)) continue;
    const int depth = manifest_.module(c).depth;
    if (best == kNoModule || depth < best_depth) {
      best = c;
      best_depth = depth;
    } else if (depth == best_depth) {
      *ambiguous = true;
    }
  }
  return best;
}

ScopeResolution ScopeResolver::Resolve(absl::Span<const absl::string_view> segments,
                                       ModuleId root,
                                       absl::Span<const std::string> wrapper) const {
  ScopeResolution r;
  r.total = segments.size();
  if (segments.size() < wrapper.size()) return r;
  for (std::size_t i = 0; i < wrapper.size(); ++i) {
    if (segments[i] != wrapper[i]) return r;
  }
  ModuleId current = root;
  std::size_t i = wrapper.size();
  for (; i < segments.size(); ++i) {
    bool indirect = false;
    ModuleId next = Step(current, segments[i], &r.ambiguous, &indirect);
    if (next == kNoModule) {
      // A module called more than once: "relu_1" is the second call of "relu".
      absl::string_view base;
      long call = 0;
      if (SplitCallSuffix(segments[i], &base, &call)) {
        indirect = false;
        next = Step(current, base, &r.ambiguous, &indirect);
        if (next != kNoModule) r.call_suffix = true;
      }
    }
    if (next == kNoModule) break;
    r.indirect += indirect;
    current = next;
  }
  r.module = current;
  r.resolved = i;
  return r;
}

}  // namespace internal
}  // namespace semmap
