#include "mapping/steps/group_scopes.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/parallel.h"
#include "base/text.h"
#include "graph/exporter_metadata.h"
#include "graph/node_fields.h"
#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {
namespace {

// Without a manifest every prefix of a scope's dotted path becomes a
// module, so a path of n atoms costs O(n x length): paths are cut (at an
// atom) to these bounds, which real module paths are far below, keeping the
// work on a hostile name linear in its length.
constexpr std::size_t kMaxDerivedAtoms = 64;
constexpr std::size_t kMaxDerivedPathBytes = 1024;

absl::string_view ScopeKey(absl::string_view name) {
  return name.substr(0, name.rfind('/'));
}

// A prefix needs this many scoped names behind it to be an inliner's.
constexpr std::size_t kMinPrefixedNodes = 8;

// Where the scoped part of `name` starts: 0 for "/a/b/Op", the first '/' of
// "<prefix>/a/b/Op" (a scoped name behind a prefix, two '/' at least), or
// npos.
std::size_t ScopedStart(absl::string_view name) {
  if (name.empty()) return absl::string_view::npos;
  if (name.front() == '/') return 0;
  const std::size_t slash = name.find('/');
  if (slash == absl::string_view::npos || name.find('/', slash + 1) == absl::string_view::npos) {
    return absl::string_view::npos;
  }
  return slash;
}

// The prefixes a tool put before TorchScript scopes when it inlined them
// ("If_0_then_branch__Inline_0__/encoder/0/conv/Conv"), learned from the
// file: the text before the first '/' of names that continue as a scoped
// name, shared by kMinPrefixedNodes names or more.
absl::flat_hash_set<absl::string_view> InliningPrefixes(const NodeFields& nodes, std::size_t n) {
  absl::flat_hash_map<absl::string_view, std::size_t> counts;
  for (std::size_t i = 0; i < n; ++i) {
    const absl::string_view name = nodes.name(static_cast<NodeId>(i));
    if (name.empty() || name.front() == '/') continue;
    const std::size_t start = ScopedStart(name);
    if (start != absl::string_view::npos) ++counts[name.substr(0, start)];
  }
  absl::flat_hash_set<absl::string_view> out;
  for (const auto& [prefix, count] : counts) {
    if (count >= kMinPrefixedNodes) out.insert(prefix);
  }
  return out;
}

// The scoped part of a name Number() took as scoped.
absl::string_view ScopedPart(absl::string_view name) {
  return name.front() == '/' ? name : name.substr(name.find('/'));
}

// The manifest-free module path of a scope: the metadata path as written,
// or ScopePath::DottedPath() rules for names.
std::string DottedPath(const Scope& s) {
  if (s.from_metadata) return s.text;
  return DottedPathOf(s.segments);
}

// `path` cut after kMaxDerivedAtoms atoms or before passing
// kMaxDerivedPathBytes, at an atom boundary.
std::string BoundedPath(std::string path) {
  std::size_t atoms = 1, cut = std::string::npos;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '.') continue;
    if (i > kMaxDerivedPathBytes) break;
    cut = i;
    if (++atoms > kMaxDerivedAtoms) break;
  }
  if (atoms > kMaxDerivedAtoms || path.size() > kMaxDerivedPathBytes) {
    path.resize(cut == std::string::npos ? std::min(path.size(), kMaxDerivedPathBytes) : cut);
  }
  return path;
}

using KeyedScope = std::pair<absl::string_view, Scope*>;

// Scopes [from, to) keyed by their segments joined by '\0' (written to
// `text`), sorted. '\0' sorts below every other byte: comparing the joined
// texts orders as comparing segment by segment, at one memcmp per
// comparison.
void SortRange(std::vector<Scope>* scopes, std::size_t from, std::size_t to, std::string* text,
               std::vector<KeyedScope>* keyed) {
  std::size_t bytes = 0;
  for (std::size_t k = from; k < to; ++k) {
    for (absl::string_view segment : (*scopes)[k].segments) bytes += segment.size() + 1;
  }
  text->reserve(bytes);  // views below stay valid: the text does not move
  keyed->reserve(to - from);
  for (std::size_t k = from; k < to; ++k) {
    const Scope& scope = (*scopes)[k];
    const std::size_t begin = text->size();
    for (std::size_t i = 0; i < scope.segments.size(); ++i) {
      if (i > 0) text->push_back('\0');
      text->append(scope.segments[i].data(), scope.segments[i].size());
    }
    keyed->emplace_back(absl::string_view(*text).substr(begin), &(*scopes)[k]);
  }
  std::sort(keyed->begin(), keyed->end(),
            [](const KeyedScope& a, const KeyedScope& b) { return a.first < b.first; });
}

// The scopes sorted by their segments (GraphScopes::ordered): two halves
// sorted on two cores for many scopes, then merged. Ties (equal segments)
// resolve alike whatever their order.
std::vector<Scope*> SortedScopes(std::vector<Scope>* scopes) {
  const std::size_t n = scopes->size();
  const std::size_t mid = n / 2;
  std::string text[2];
  std::vector<KeyedScope> keyed[2];
  RunBoth(n >= kParallelNodes / 8, [&] { SortRange(scopes, mid, n, &text[1], &keyed[1]); },
          [&] { SortRange(scopes, 0, mid, &text[0], &keyed[0]); });
  std::vector<KeyedScope> merged(n);
  std::merge(keyed[0].begin(), keyed[0].end(), keyed[1].begin(), keyed[1].end(), merged.begin(),
             [](const KeyedScope& a, const KeyedScope& b) { return a.first < b.first; });
  std::vector<Scope*> ordered;
  ordered.reserve(n);
  for (const KeyedScope& entry : merged) ordered.push_back(entry.second);
  return ordered;
}

struct MetadataScope {
  std::string path;  // the deepest module path
  std::string qualified_class;
};

constexpr std::uint32_t kNone = UINT32_MAX;

// The distinct scopes of some nodes, numbered in the order first met.
class ScopeTable {
 public:
  // A name scope, keyed by the name's text before its last '/' (a view
  // into the Graph); `node` is the node naming it.
  std::uint32_t Name(absl::string_view key, std::size_t node) {
    auto inserted = names_.try_emplace(key, Next());
    if (inserted.second) firsts_.push_back({key, node, kNone});
    return inserted.first->second;
  }

  // A module-stack scope; the first node to name it gives its class.
  std::uint32_t Stack(MetadataScope&& stack) {
    auto inserted = stacks_.try_emplace(stack.path, Next());
    if (inserted.second) {
      firsts_.push_back({{}, 0, static_cast<std::uint32_t>(stack_scopes_.size())});
      stack_scopes_.push_back(std::move(stack));
    }
    return inserted.first->second;
  }

  // Reads the scopes of nodes [from, to) and numbers them into `index`,
  // in one pass: a node name counts when it starts with '/' and the rules
  // do not call it derived from a value name, else the node's module
  // stack, if any. A node with the previous scoped node's key (a module's
  // nodes usually follow each other) takes its scope without a lookup.
  // A name behind one of `prefixes` counts as its scoped part, keyed with
  // the prefix (each inlined sub-model's scopes are its own).
  void Number(const NodeFields& nodes, const RuleQueries& queries,
              const absl::flat_hash_set<absl::string_view>& prefixes, std::size_t from,
              std::size_t to, std::vector<std::uint32_t>* index) {
    ModuleStack stack;
    absl::string_view last_key;
    std::uint32_t last = kNone;
    for (std::size_t i = from; i < to; ++i) {
      const NodeId id = static_cast<NodeId>(i);
      const absl::string_view name = nodes.name(id);
      bool scoped = !name.empty() && name.front() == '/';
      if (!scoped && !prefixes.empty() && !name.empty()) {
        const std::size_t start = ScopedStart(name);
        scoped = start != absl::string_view::npos && prefixes.contains(name.substr(0, start));
      }
      if (scoped && !queries.IsDerivedNodeName(ScopedPart(name))) {
        const absl::string_view key = ScopeKey(name);
        if (last == kNone || key != last_key) {
          last = Name(key, i);
          last_key = key;
        }
        (*index)[i] = last;
      } else if (ReadModuleStack(nodes.metadata(id), &stack)) {
        (*index)[i] = Stack({stack.deepest(), stack.deepestClass()});
      }
    }
  }

  // Adds the scopes of `later` (numbered from later nodes) that this table
  // lacks, in their order; returns each one's number here.
  std::vector<std::uint32_t> Absorb(ScopeTable&& later) {
    std::vector<std::uint32_t> renumbered(later.firsts_.size());
    for (std::size_t k = 0; k < later.firsts_.size(); ++k) {
      const First& f = later.firsts_[k];
      renumbered[k] = f.stack == kNone
                          ? Name(f.key, f.node)
                          : Stack(std::move(later.stack_scopes_[f.stack]));
    }
    return renumbered;
  }

  std::size_t size() const { return firsts_.size(); }

  // Makes scopes [from, to) in `all` (already sized), their segments
  // appended to `pool` and each one's (offset, count) into it to `spans`.
  void Build(const NodeFields& nodes, std::size_t from, std::size_t to, std::vector<Scope>* all,
             std::vector<absl::string_view>* pool,
             std::vector<std::pair<std::size_t, std::size_t>>* spans) {
    for (std::size_t k = from; k < to; ++k) {
      Scope& s = (*all)[k];
      const First& f = firsts_[k];
      const std::size_t begin = pool->size();
      if (f.stack == kNone) {
        s.key = f.key;
        const absl::string_view name = nodes.name(static_cast<NodeId>(f.node));
        const absl::string_view scoped = ScopedPart(name);
        s.prefix = name.substr(0, name.size() - scoped.size());
        const ScopePath path = ScopePath::Parse(scoped);
        pool->insert(pool->end(), path.segments().begin(), path.segments().end());
      } else {
        MetadataScope& stack = stack_scopes_[f.stack];
        s.from_metadata = true;
        s.text = std::move(stack.path);
        s.qualified_class = std::move(stack.qualified_class);
        for (absl::string_view atom : absl::StrSplit(s.text, '.', absl::SkipEmpty())) {
          pool->push_back(atom);
        }
      }
      spans->emplace_back(begin, pool->size() - begin);
    }
  }

 private:
  struct First {
    absl::string_view key;  // name scopes
    std::size_t node;       // name scopes: the first node naming it
    std::uint32_t stack;    // metadata scopes: index into stack_scopes_
  };
  std::uint32_t Next() const { return static_cast<std::uint32_t>(firsts_.size()); }

  absl::flat_hash_map<absl::string_view, std::uint32_t> names_;
  absl::flat_hash_map<std::string, std::uint32_t> stacks_;
  std::vector<First> firsts_;
  std::vector<MetadataScope> stack_scopes_;
};

}  // namespace

// The pass over the nodes, and the making of the scopes, goes in two
// halves on two cores on a large graph; the halves' scope tables are then
// merged, numbering the scopes as one pass in node order would.
GraphScopes GroupScopes(const Graph& graph, const Rules& rules) {
  GraphScopes out;
  const NodeFields nodes(graph);
  const RuleQueries queries(rules);
  const std::size_t n = graph.size();
  const bool parallel = n >= kParallelNodes;
  const std::size_t mid = n / 2;
  std::vector<std::uint32_t> index(n, kNone);
  ScopeTable tables[2];
  const absl::flat_hash_set<absl::string_view> prefixes = InliningPrefixes(nodes, n);
  RunBoth(
      parallel, [&] { tables[1].Number(nodes, queries, prefixes, mid, n, &index); },
      [&] { tables[0].Number(nodes, queries, prefixes, 0, mid, &index); });
  ScopeTable& table = tables[0];
  const std::vector<std::uint32_t> renumbered = table.Absorb(std::move(tables[1]));
  for (std::size_t i = mid; i < n; ++i) {
    if (index[i] != kNone) index[i] = renumbered[index[i]];
  }

  const std::size_t count = table.size();
  out.all.resize(count);
  std::vector<absl::string_view> pools[2];
  std::vector<std::pair<std::size_t, std::size_t>> spans[2];
  const std::size_t half = count / 2;
  RunBoth(parallel, [&] { table.Build(nodes, half, count, &out.all, &pools[1], &spans[1]); },
          [&] { table.Build(nodes, 0, half, &out.all, &pools[0], &spans[0]); });
  out.segments = std::move(pools[0]);
  const std::size_t shift = out.segments.size();
  out.segments.insert(out.segments.end(), pools[1].begin(), pools[1].end());
  for (std::size_t k = 0; k < count; ++k) {
    const auto& span = k < half ? spans[0][k] : spans[1][k - half];
    out.all[k].segments = absl::MakeConstSpan(
        out.segments.data() + span.first + (k < half ? 0 : shift), span.second);
  }

  out.of_node.assign(n, nullptr);
  for (std::size_t i = 0; i < n; ++i) {
    if (index[i] == kNone) continue;
    Scope* s = &out.all[index[i]];
    ++s->nodes;
    out.of_node[i] = s;
  }
  out.ordered = SortedScopes(&out.all);
  return out;
}

std::vector<std::pair<std::string, std::string>> DerivedModulePaths(const GraphScopes& scopes) {
  absl::flat_hash_map<std::string, std::string> raw;  // path -> class
  for (const Scope& scope : scopes.all) {
    std::string& cls = raw[BoundedPath(DottedPath(scope))];
    if (cls.empty()) cls = scope.qualified_class;
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(raw.size());
  for (const auto& entry : raw) {
    std::string rewritten;
    for (absl::string_view atom : absl::StrSplit(entry.first, '.')) {
      absl::string_view base;
      long call = 0;
      const std::string prefix = rewritten.empty() ? "" : rewritten + ".";
      if (SplitCallSuffix(atom, &base, &call) && raw.contains(absl::StrCat(prefix, base))) {
        atom = base;
      }
      rewritten = absl::StrCat(prefix, atom);
    }
    out.emplace_back(std::move(rewritten), entry.second);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ModuleId> ResolvedModulesOfNodes(const GraphScopes& scopes) {
  std::vector<ModuleId> modules(scopes.of_node.size(), kNoModule);
  for (std::size_t i = 0; i < scopes.of_node.size(); ++i) {
    const Scope* s = scopes.of_node[i];
    if (s != nullptr && s->resolution.complete() && s->outcome.mapped()) {
      modules[i] = s->outcome.module;
    }
  }
  return modules;
}

std::vector<ScopeSample> ScopeSamples(const GraphScopes& scopes) {
  std::vector<ScopeSample> samples;
  samples.reserve(scopes.all.size());
  for (const Scope& scope : scopes.all) {
    samples.push_back({scope.from_metadata, scope.key, scope.text, scope.segments,
                       scope.qualified_class, scope.nodes, &scope.resolution});
  }
  return samples;
}

std::string ScopeEvidence(const Scope& s) {
  std::string text;
  AppendScopeEvidence(s, &text);
  return text;
}

void AppendScopeEvidence(const Scope& s, std::string* out) {
  constexpr std::size_t kMaxBytes = 80;  // then abbreviated
  if (s.from_metadata) {
    out->append("module stack ");
    if (s.text.size() <= kMaxBytes) {
      out->append(s.text);
    } else {
      out->append(Abbreviate(s.text, kMaxBytes));
    }
    return;
  }
  out->append("scope /");
  std::size_t joined = s.segments.empty() ? 0 : s.segments.size() - 1;
  for (absl::string_view segment : s.segments) joined += segment.size();
  if (joined > kMaxBytes) {
    out->append(Abbreviate(absl::StrJoin(s.segments, "/"), kMaxBytes));
    return;
  }
  for (std::size_t i = 0; i < s.segments.size(); ++i) {
    if (i > 0) out->push_back('/');
    out->append(s.segments[i].data(), s.segments[i].size());
  }
}

}  // namespace internal
}  // namespace semmap
