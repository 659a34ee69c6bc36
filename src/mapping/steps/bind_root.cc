#include "mapping/steps/bind_root.h"

#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "base/parallel.h"
#include "mapping/core/scope_resolver.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {
namespace {

constexpr std::size_t kMaxBindingCandidates = 256;

// From this many scopes on, they are resolved in two halves on two cores
// (each half shares its steps within itself: the results are the same).
constexpr std::size_t kParallelScopes = std::size_t{1} << 13;

// Resolves ordered[from, to) under `binding` into out[from, to).
void ResolveRange(const Manifest& manifest, const RootBinding& binding,
                  absl::Span<Scope* const> ordered, std::size_t from, std::size_t to,
                  ScopeResolution* out) {
  const ScopeResolver resolver(manifest);
  PrefixResolver prefix(resolver, binding.root, binding.wrapper);
  for (std::size_t i = from; i < to; ++i) out[i] = prefix.Resolve(ordered[i]->segments);
}

// Every scope of `ordered` resolved under `binding`, in order.
void ResolveAll(const Manifest& manifest, const RootBinding& binding,
                absl::Span<Scope* const> ordered, std::vector<ScopeResolution>* out) {
  const std::size_t n = ordered.size();
  out->assign(n, ScopeResolution{});
  ScopeResolution* data = out->data();
  const std::size_t mid = n / 2;
  RunBoth(n >= kParallelScopes,
          [&] { ResolveRange(manifest, binding, ordered, mid, n, data); },
          [&] { ResolveRange(manifest, binding, ordered, 0, mid, data); });
}

}  // namespace

void ResolveScopesUnder(const Manifest& manifest, const RootBinding& binding,
                        absl::Span<Scope* const> ordered) {
  std::vector<ScopeResolution> resolutions;
  ResolveAll(manifest, binding, ordered, &resolutions);
  for (std::size_t i = 0; i < ordered.size(); ++i) ordered[i]->resolution = resolutions[i];
}

std::vector<RootBinding> RootBindingCandidates(const Manifest& manifest,
                                               absl::Span<Scope* const> ordered,
                                               int max_wrapper_segments) {
  std::vector<RootBinding> out;
  out.emplace_back();  // ONNX root == manifest root
  absl::flat_hash_set<ModuleId> roots = {0};
  absl::flat_hash_set<std::string> wrappers;
  // Scopes sharing a first segment share its callers: each segment is
  // looked up once, so the lookups cost at most one visit per module (a
  // module has one variable name).
  absl::flat_hash_set<absl::string_view> looked_up;
  // A scope whose first segment is the previous scope's, and names a
  // module, adds nothing: its callers were looked up and it has no wrapper.
  absl::string_view previous_first;
  bool previous_named = false;
  for (const Scope* scope : ordered) {
    const auto& segments = scope->segments;
    if (segments.empty()) continue;
    absl::string_view first = segments[0];
    if (previous_named && first == previous_first) continue;
    previous_first = first;
    previous_named = !manifest.withVariableName(first).empty();
    // The module that calls a match of the first segment directly: the
    // match's path without the segment ("encoder.layer.0" - "layer.0").
    auto add_callers_of = [&](absl::string_view segment) {
      if (!looked_up.insert(segment).second) return;
      for (ModuleId c : manifest.withVariableName(segment)) {
        // Checked per candidate: one segment may name 10^5 modules.
        if (out.size() >= kMaxBindingCandidates) return;
        const absl::string_view path = manifest.path(c);
        if (path.size() == segment.size()) continue;  // the root's own child
        const ModuleId caller =
            manifest.find(absl::string_view(path).substr(0, path.size() - segment.size() - 1));
        if (caller != kNoModule && roots.insert(caller).second) {
          RootBinding b;
          b.root = caller;
          out.push_back(std::move(b));
        }
      }
    };
    add_callers_of(first);
    absl::string_view base;
    long call = 0;
    if (SplitCallSuffix(first, &base, &call)) add_callers_of(base);
    // Leading segments that name no module: a wrapper around the manifest.
    std::vector<std::string> wrapper;
    for (std::size_t i = 0; i < segments.size() &&
                            static_cast<int>(i) < max_wrapper_segments;
         ++i) {
      if (out.size() >= kMaxBindingCandidates) break;
      if (!manifest.withVariableName(segments[i]).empty()) break;
      wrapper.emplace_back(segments[i]);
      if (wrappers.insert(absl::StrJoin(wrapper, "/")).second) {
        RootBinding b;
        b.wrapper = wrapper;
        out.push_back(std::move(b));
      }
    }
    if (out.size() >= kMaxBindingCandidates) break;
  }
  return out;
}

RootBinding ChooseRootBinding(const Manifest& manifest, absl::Span<Scope* const> ordered,
                              int max_wrapper_segments) {
  std::vector<RootBinding> candidates =
      RootBindingCandidates(manifest, ordered, max_wrapper_segments);
  RootBinding best;
  bool have_best = false;
  // The best candidate's resolutions are kept: they are the scopes'.
  std::vector<ScopeResolution> trial, kept;
  const auto key = [&manifest](const RootBinding& b) {
    // More resolved nodes, then scopes that follow the module tree step by
    // step, then fewer wrapper segments, then a shallower root. The last
    // two make the choice independent of hash-map iteration order.
    return std::make_tuple(b.resolved_nodes, -static_cast<long>(b.indirect_steps),
                           -static_cast<long>(b.wrapper.size()),
                           -manifest.depth(b.root), -b.root);
  };
  for (RootBinding& c : candidates) {
    ResolveAll(manifest, c, ordered, &trial);
    for (std::size_t i = 0; i < ordered.size(); ++i) {
      const std::size_t nodes = ordered[i]->nodes;
      c.scoped_nodes += nodes;
      if (trial[i].complete()) c.resolved_nodes += nodes;
      c.indirect_steps += trial[i].indirect * nodes;
    }
    if (!have_best || key(c) > key(best) ||
        (key(c) == key(best) && c.wrapper < best.wrapper)) {
      best = c;
      kept.swap(trial);
      have_best = true;
    }
  }
  for (std::size_t i = 0; i < ordered.size(); ++i) ordered[i]->resolution = kept[i];
  return best;
}

}  // namespace internal
}  // namespace semmap
