#include "mapping/core/scope_resolver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {

ModuleId ScopeResolver::Step(ModuleId parent, absl::string_view segment,
                             bool* ambiguous, bool* indirect) const {
  // The common case: the segment is the child's own attribute name, or a
  // ModuleList child ("layer.0") right under the module that called it.
  const ModuleId direct = manifest_.findChild(parent, segment);
  if (direct != kNoModule) return direct;
  *indirect = true;
  // Otherwise a descendant with that variable name: a called container
  // repeating its name ("layer1" then "layer1.0"), or a module called by an
  // ancestor of its parent. The shallowest such descendant wins.
  ModuleId best = kNoModule;
  int best_depth = 0;
  for (ModuleId c : manifest_.withVariableName(segment)) {
    if (c == parent || !manifest_.isAncestorOrSelf(parent, c)) continue;
    const int depth = manifest_.depth(c);
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

ScopeResolution PrefixResolver::Resolve(absl::Span<const absl::string_view> segments) {
  ScopeResolution r;
  r.total = segments.size();
  const std::size_t w = wrapper_.size();
  bool wrapped = segments.size() >= w;
  for (std::size_t i = 0; wrapped && i < w; ++i) wrapped = segments[i] == wrapper_[i];
  if (!wrapped) return r;
  // Steps shared with the previous scope: its segments up to the first
  // difference, as far as it resolved them.
  std::size_t shared = 0;
  while (shared < segments.size() && shared < previous_.size() &&
         segments[shared] == previous_[shared]) {
    ++shared;
  }
  std::size_t keep = shared > w ? shared - w : 0;
  if (states_.empty()) states_.push_back(State{root_, false, false, 0});
  states_[0].module = root_;
  keep = std::min(keep, states_.size() - 1);
  states_.resize(keep + 1);
  previous_ = segments;
  for (std::size_t i = w + keep; i < segments.size(); ++i) {
    State next = states_.back();
    bool indirect = false;
    ModuleId m = resolver_.Step(next.module, segments[i], &next.ambiguous, &indirect);
    if (m == kNoModule) {
      // A module called more than once: "relu_1" is the second call of "relu".
      absl::string_view base;
      long call = 0;
      if (SplitCallSuffix(segments[i], &base, &call)) {
        indirect = false;
        m = resolver_.Step(next.module, base, &next.ambiguous, &indirect);
        if (m != kNoModule) next.call_suffix = true;
      }
    }
    if (m == kNoModule) break;
    next.module = m;
    next.indirect += indirect;
    states_.push_back(next);
  }
  const State& last = states_.back();
  r.module = last.module;
  r.resolved = w + states_.size() - 1;
  r.call_suffix = last.call_suffix;
  r.ambiguous = last.ambiguous;
  r.indirect = last.indirect;
  return r;
}

}  // namespace internal
}  // namespace semmap
