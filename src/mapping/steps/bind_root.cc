#include "mapping/steps/bind_root.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "base/parallel.h"
#include "base/text.h"
#include "mapping/core/scope_resolver.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {
namespace {

constexpr std::size_t kMaxBindingCandidates = 256;
// Children of the manifest root tried as the module a renamed first segment
// names (RootBindingCandidates).
constexpr std::size_t kMaxRenamedChildren = 16;

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

// Whether two attribute names differ only in case and underscores
// ("model", "_model", "Model_"): the same attribute under a private or
// public spelling. Names of sibling models' bases ("bert", "roberta") do
// not, and a subtree alone cannot tell those apart where the exporter
// writes no classes.
bool SameAttributeWord(absl::string_view a, absl::string_view b) {
  std::size_t i = 0, j = 0;
  bool any = false;
  while (true) {
    while (i < a.size() && a[i] == '_') ++i;
    while (j < b.size() && b[j] == '_') ++j;
    if (i == a.size() || j == b.size()) return any && i == a.size() && j == b.size();
    if (absl::ascii_tolower(static_cast<unsigned char>(a[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(b[j]))) {
      return false;
    }
    any = true;
    ++i;
    ++j;
  }
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
  absl::flat_hash_set<absl::string_view> renamed;  // first segments tried as renamed children
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
    // A first segment that names no module may be a child of the root under
    // another spelling of its attribute (a wrapper's "model" written
    // "_model" where the manifest was made): each such child of the root is
    // tried as the module it names, and the scopes below it decide.
    if (manifest.withVariableName(first).empty() && renamed.insert(first).second) {
      const absl::Span<const ModuleId> children = manifest.children(0);
      for (std::size_t i = 0; i < children.size() && i < kMaxRenamedChildren; ++i) {
        if (out.size() >= kMaxBindingCandidates) break;
        if (!SameAttributeWord(manifest.path(children[i]), first)) continue;
        RootBinding b;
        b.root = children[i];
        b.wrapper = {std::string(first)};
        out.push_back(std::move(b));
      }
    }
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

void BindInitializerWrapper(const Graph& graph, const Manifest& manifest,
                            int max_wrapper_segments, RootBinding* binding) {
  if (binding->scoped_nodes > 0 || !binding->wrapper.empty() || binding->root != 0) return;
  std::size_t named = 0;    // parameter-named initializers
  std::size_t literal = 0;  // of those, resolving as written
  // Per candidate prefix ("inner."), the names resolving without it.
  absl::flat_hash_map<absl::string_view, std::size_t> resolving;
  for (const TensorInfo& t : graph.initializers()) {
    const absl::string_view name = t.name;
    if (!ParameterLikeName(name)) continue;
    ++named;
    if (manifest.ownerOfTensor(name) != kNoModule) {
      ++literal;
      continue;
    }
    std::size_t end = 0;
    for (int atoms = 1; atoms <= max_wrapper_segments; ++atoms) {
      end = name.find('.', end == 0 ? 0 : end + 1);
      if (end == absl::string_view::npos) break;
      const absl::string_view prefix = name.substr(0, end);
      if (manifest.find(prefix) != kNoModule) break;  // a module's path, no wrapper
      if (manifest.ownerOfTensor(name.substr(end + 1)) != kNoModule) ++resolving[prefix];
    }
  }
  absl::string_view best;
  std::size_t best_count = 0;
  for (const auto& [prefix, count] : resolving) {
    if (count > best_count || (count == best_count && prefix < best)) {
      best = prefix;
      best_count = count;
    }
  }
  if (best_count <= literal || best_count * 2 < named) return;
  binding->wrapper = absl::StrSplit(best, '.');
}

RootBinding ChooseRootBinding(const Manifest& manifest, absl::Span<Scope* const> ordered,
                              int max_wrapper_segments) {
  return ChooseRootBinding(manifest, ordered, max_wrapper_segments, nullptr);
}

RootBinding ChooseRootBinding(const Manifest& manifest, absl::Span<Scope* const> ordered,
                              int max_wrapper_segments, std::vector<RootBinding>* tied) {
  std::vector<RootBinding> candidates =
      RootBindingCandidates(manifest, ordered, max_wrapper_segments);
  RootBinding best;
  bool have_best = false;
  // The best candidate's resolutions are kept: they are the scopes'.
  std::vector<ScopeResolution> trial, kept;
  // More resolved nodes, then scopes that follow the module tree step by
  // step, then fewer wrapper segments, then a shallower root; then the
  // lowest module id, which with the wrapper text makes the choice
  // independent of hash-map iteration order.
  const auto rank = [&manifest](const RootBinding& b) {
    return std::make_tuple(b.resolved_nodes, -static_cast<long>(b.indirect_steps),
                           -static_cast<long>(b.wrapper.size()), -manifest.depth(b.root));
  };
  const auto key = [&rank](const RootBinding& b) {
    return std::tuple_cat(rank(b), std::make_tuple(-b.root));
  };
  // As good a root as `b` but for the module (two equal sub-models).
  const auto tie = [&rank](const RootBinding& a, const RootBinding& b) {
    return rank(a) == rank(b) && a.wrapper == b.wrapper;
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
      if (tied != nullptr) {
        if (have_best && tie(c, best)) {
          tied->push_back(best);
        } else {
          tied->clear();
        }
      }
      best = c;
      kept.swap(trial);
      have_best = true;
    } else if (tied != nullptr && tie(c, best)) {
      tied->push_back(c);
    }
  }
  for (std::size_t i = 0; i < ordered.size(); ++i) ordered[i]->resolution = kept[i];
  return best;
}

}  // namespace internal
}  // namespace semmap

namespace semmap {
namespace internal {

RootBinding ChooseRootBindings(const Manifest& manifest, absl::Span<Scope* const> ordered,
                               int max_wrapper_segments) {
  // The sub-models: scopes grouped by their inliner's prefix, each group in
  // `ordered`'s order, the groups in the order the nodes first name them
  // (scopes live in one array in that order: GraphScopes::all).
  std::vector<std::pair<const Scope*, absl::string_view>> prefixes;  // first scope, prefix
  absl::flat_hash_map<absl::string_view, std::vector<Scope*>> groups;
  for (Scope* s : ordered) {
    auto inserted = groups.try_emplace(s->prefix);
    if (inserted.second) prefixes.emplace_back(s, s->prefix);
    inserted.first->second.push_back(s);
  }
  if (groups.size() <= 1) return ChooseRootBinding(manifest, ordered, max_wrapper_segments);
  for (auto& [first, prefix] : prefixes) {
    for (const Scope* s : groups[prefix]) first = std::min(first, s);
  }
  std::sort(prefixes.begin(), prefixes.end());
  RootBinding main;
  std::size_t main_nodes = 0, scoped = 0, resolved = 0, indirect = 0;
  absl::flat_hash_set<ModuleId> taken;
  for (const auto& [first, prefix] : prefixes) {
    const std::vector<Scope*>& group = groups[prefix];
    std::vector<RootBinding> tied;
    RootBinding b = ChooseRootBinding(manifest, group, max_wrapper_segments, &tied);
    if (!tied.empty()) {
      // Equal sub-models of the manifest bind equally well: each sub-model
      // of the file takes the next one not taken (in the file's order and
      // the manifest's), and its answers say the choice was a guess.
      tied.insert(tied.begin(), b);
      std::sort(tied.begin(), tied.end(),
                [](const RootBinding& x, const RootBinding& y) { return x.root < y.root; });
      auto free = std::find_if(tied.begin(), tied.end(),
                               [&](const RootBinding& t) { return !taken.contains(t.root); });
      if (free != tied.end() && free->root != b.root) {
        b = *free;
        ResolveScopesUnder(manifest, b, group);
      }
      for (Scope* s : group) s->resolution.ambiguous = true;
    }
    taken.insert(b.root);
    scoped += b.scoped_nodes;
    resolved += b.resolved_nodes;
    indirect += b.indirect_steps;
    if (b.scoped_nodes > main_nodes) {
      main = b;
      main_nodes = b.scoped_nodes;
    }
  }
  main.scoped_nodes = scoped;
  main.resolved_nodes = resolved;
  main.indirect_steps = indirect;
  return main;
}

}  // namespace internal
}  // namespace semmap
