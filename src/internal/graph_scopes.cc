#include "internal/graph_scopes.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "internal/exporter_metadata.h"
#include "internal/file_io.h"
#include "internal/parallel.h"

namespace semmap {
namespace internal {
namespace {

// Without a manifest every prefix of a scope's dotted path becomes a
// module, so a path of n atoms costs O(n x length): paths are cut (at an
// atom) to these bounds, which real module paths are far below, keeping the
// work on a hostile name linear in its length.
constexpr std::size_t kMaxDerivedAtoms = 64;
constexpr std::size_t kMaxDerivedPathBytes = 1024;

using ScopeMap = absl::node_hash_map<std::string, Scope>;

absl::string_view ScopeKey(absl::string_view name) {
  return name.substr(0, name.rfind('/'));
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

// The scopes sorted by their segments (GraphScopes::ordered).
std::vector<Scope*> SortedScopes(ScopeMap* scopes) {
  // Each scope's segments joined by '\0', which sorts below every other
  // byte: comparing the joined texts orders as comparing segment by
  // segment, at one memcmp per comparison.
  std::string text;
  std::vector<std::pair<absl::string_view, Scope*>> keyed;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  spans.reserve(scopes->size());
  for (auto& entry : *scopes) {
    const std::size_t begin = text.size();
    for (std::size_t i = 0; i < entry.second.segments.size(); ++i) {
      if (i > 0) text.push_back('\0');
      text.append(entry.second.segments[i].data(), entry.second.segments[i].size());
    }
    spans.emplace_back(begin, text.size() - begin);
  }
  keyed.reserve(scopes->size());
  std::size_t k = 0;
  for (auto& entry : *scopes) {
    keyed.emplace_back(absl::string_view(text).substr(spans[k].first, spans[k].second),
                       &entry.second);
    ++k;
  }
  // Ties (equal segments) resolve alike whatever their order.
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Scope*> ordered;
  ordered.reserve(keyed.size());
  for (const auto& entry : keyed) ordered.push_back(entry.second);
  return ordered;
}

// What a node's name or metadata says of its scope, read without touching
// the shared scope table, so the nodes can be read on two cores.
struct NodeScope {
  enum class Kind : std::uint8_t { kNone, kName, kMetadata };
  Kind kind = Kind::kNone;
  absl::string_view key;  // kName: the name's text before its last '/'
  std::size_t stack = 0;  // kMetadata: index into the reader's stacks
};

struct MetadataScope {
  std::string path;  // the deepest module path
  std::string qualified_class;
};

// Reads the scopes of nodes [from, to) into `out` (indexed by node),
// module stacks into `stacks`.
void ReadNodeScopes(const Graph& graph, const Rules& rules, std::size_t from, std::size_t to,
                    std::vector<NodeScope>* out, std::vector<MetadataScope>* stacks) {
  ModuleStack stack;
  for (std::size_t i = from; i < to; ++i) {
    const Node& node = graph.node(static_cast<NodeId>(i));
    NodeScope& ns = (*out)[i];
    if (!node.name.empty() && node.name.front() == '/' && !rules.isDerivedNodeName(node.name)) {
      ns.kind = NodeScope::Kind::kName;
      ns.key = ScopeKey(node.name);
      continue;
    }
    if (!ReadModuleStack(node.metadata, &stack)) continue;
    ns.kind = NodeScope::Kind::kMetadata;
    ns.stack = stacks->size();
    stacks->push_back({stack.deepest(), stack.deepestClass()});
  }
}

// Registers a name scope (parsed from `name` the first time).
Scope* NameScope(absl::string_view key, absl::string_view name, ScopeMap* scopes) {
  auto it = scopes->find(key);
  if (it == scopes->end()) {
    it = scopes->try_emplace(std::string(key)).first;
    it->second.segments = ScopePath::Parse(name).segments();
  }
  return &it->second;
}

// Registers a module-stack scope; the first node to name it gives its class.
Scope* StackScope(const MetadataScope& stack, ScopeMap* scopes) {
  auto inserted = scopes->try_emplace(absl::StrCat("\x1e", stack.path));
  Scope& s = inserted.first->second;
  if (inserted.second) {
    s.from_metadata = true;
    s.text = stack.path;
    s.qualified_class = stack.qualified_class;
    for (absl::string_view atom : absl::StrSplit(s.text, '.', absl::SkipEmpty())) {
      s.segments.push_back(atom);
    }
  }
  return &s;
}

}  // namespace

GraphScopes GroupScopes(const Graph& graph, const Rules& rules) {
  GraphScopes out;
  const std::size_t n = graph.size();
  out.of_node.assign(n, nullptr);
  // Reading names (the derived-name rule is a regular expression) and
  // module stacks is per node: the two halves on two cores on a large graph.
  std::vector<NodeScope> read(n);
  std::vector<MetadataScope> stacks[2];
  const std::size_t mid = n / 2;
  RunBoth(n >= kParallelNodes,
          [&] { ReadNodeScopes(graph, rules, mid, n, &read, &stacks[1]); },
          [&] { ReadNodeScopes(graph, rules, 0, mid, &read, &stacks[0]); });
  // Then registered in node order. A module's nodes usually follow each
  // other, so a node with the previous node's key takes its scope without
  // a lookup.
  absl::string_view last_key;
  Scope* last = nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    const NodeScope& ns = read[i];
    Scope* s = nullptr;
    if (ns.kind == NodeScope::Kind::kName) {
      s = last != nullptr && ns.key == last_key
              ? last
              : NameScope(ns.key, graph.node(static_cast<NodeId>(i)).name, &out.by_key);
      last = s;
      last_key = ns.key;
    } else if (ns.kind == NodeScope::Kind::kMetadata) {
      s = StackScope(stacks[i < mid ? 0 : 1][ns.stack], &out.by_key);
    }
    if (s != nullptr) ++s->nodes;
    out.of_node[i] = s;
  }
  out.ordered = SortedScopes(&out.by_key);
  return out;
}

std::vector<std::pair<std::string, std::string>> DerivedModulePaths(const GraphScopes& scopes) {
  absl::flat_hash_map<std::string, std::string> raw;  // path -> class
  for (const auto& entry : scopes.by_key) {
    std::string& cls = raw[BoundedPath(DottedPath(entry.second))];
    if (cls.empty()) cls = entry.second.qualified_class;
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

std::vector<ScopeSample> ScopeSamples(const GraphScopes& scopes) {
  std::vector<ScopeSample> samples;
  samples.reserve(scopes.by_key.size());
  for (const auto& [key, scope] : scopes.by_key) {
    samples.push_back({scope.from_metadata,
                       scope.from_metadata ? absl::string_view() : absl::string_view(key),
                       scope.text, scope.segments, scope.qualified_class, scope.nodes,
                       &scope.resolution});
  }
  return samples;
}

std::string ScopeEvidence(const Scope& s) {
  return s.from_metadata
             ? absl::StrCat("module stack ", Abbreviate(s.text, 80))
             : absl::StrCat("scope /", Abbreviate(absl::StrJoin(s.segments, "/"), 80));
}

}  // namespace internal
}  // namespace semmap
