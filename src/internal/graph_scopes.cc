#include "internal/graph_scopes.h"

#include <algorithm>
#include <cstdint>
#include <utility>

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
std::vector<Scope*> SortedScopes(std::vector<Scope>* scopes) {
  // Each scope's segments joined by '\0', which sorts below every other
  // byte: comparing the joined texts orders as comparing segment by
  // segment, at one memcmp per comparison.
  std::size_t bytes = 0;
  for (const Scope& scope : *scopes) {
    for (absl::string_view segment : scope.segments) bytes += segment.size() + 1;
  }
  std::string text;
  text.reserve(bytes);
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  spans.reserve(scopes->size());
  for (const Scope& scope : *scopes) {
    const std::size_t begin = text.size();
    for (std::size_t i = 0; i < scope.segments.size(); ++i) {
      if (i > 0) text.push_back('\0');
      text.append(scope.segments[i].data(), scope.segments[i].size());
    }
    spans.emplace_back(begin, text.size() - begin);
  }
  std::vector<std::pair<absl::string_view, Scope*>> keyed;
  keyed.reserve(scopes->size());
  std::size_t k = 0;
  for (Scope& scope : *scopes) {
    keyed.emplace_back(absl::string_view(text).substr(spans[k].first, spans[k].second), &scope);
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
  static constexpr std::uint32_t kNoStack = UINT32_MAX;
  bool named = false;    // a name scope: the first key_size bytes of the name
  std::uint32_t stack = kNoStack;  // else a module stack: index into its half's
  std::size_t key_size = 0;
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
      ns.named = true;
      ns.key_size = ScopeKey(node.name).size();
      continue;
    }
    if (stacks->size() >= NodeScope::kNoStack || !ReadModuleStack(node.metadata, &stack)) {
      continue;
    }
    ns.stack = static_cast<std::uint32_t>(stacks->size());
    stacks->push_back({stack.deepest(), stack.deepestClass()});
  }
}

// The distinct scopes of the nodes, numbered in the order first met, and
// each node's number (kNone without a scope).
class ScopeTable {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // A name scope, keyed by the name's text before its last '/' (a view
  // into the Graph); `node` is the node naming it.
  std::uint32_t Name(absl::string_view key, std::size_t node) {
    auto inserted = names_.try_emplace(key, Next());
    if (inserted.second) firsts_.push_back({node, kNone});
    return inserted.first->second;
  }

  // A module-stack scope; the first node to name it gives its class.
  std::uint32_t Stack(MetadataScope&& stack) {
    auto inserted = stacks_.try_emplace(stack.path, Next());
    if (inserted.second) {
      firsts_.push_back({0, static_cast<std::uint32_t>(stack_scopes_.size())});
      stack_scopes_.push_back(std::move(stack));
    }
    return inserted.first->second;
  }

  // Makes the scopes (`all`, their segments) once their number is known:
  // nothing moves after.
  void Build(const Graph& graph, GraphScopes* out) {
    out->all.resize(firsts_.size());
    for (std::size_t k = 0; k < firsts_.size(); ++k) {
      Scope& s = out->all[k];
      const First& f = firsts_[k];
      if (f.stack == kNone) {
        const absl::string_view name = graph.node(static_cast<NodeId>(f.node)).name;
        s.key = ScopeKey(name);
        const ScopePath path = ScopePath::Parse(name);
        offsets_.emplace_back(out->segments.size(), path.segments().size());
        out->segments.insert(out->segments.end(), path.segments().begin(),
                             path.segments().end());
      } else {
        MetadataScope& stack = stack_scopes_[f.stack];
        s.from_metadata = true;
        s.text = std::move(stack.path);
        s.qualified_class = std::move(stack.qualified_class);
        const std::size_t begin = out->segments.size();
        for (absl::string_view atom : absl::StrSplit(s.text, '.', absl::SkipEmpty())) {
          out->segments.push_back(atom);
        }
        offsets_.emplace_back(begin, out->segments.size() - begin);
      }
    }
    for (std::size_t k = 0; k < firsts_.size(); ++k) {
      out->all[k].segments =
          absl::MakeConstSpan(out->segments.data() + offsets_[k].first, offsets_[k].second);
    }
  }

 private:
  struct First {
    std::size_t node;     // name scopes: the first node naming it
    std::uint32_t stack;  // metadata scopes: index into stack_scopes_
  };
  std::uint32_t Next() const { return static_cast<std::uint32_t>(firsts_.size()); }

  absl::flat_hash_map<absl::string_view, std::uint32_t> names_;
  absl::flat_hash_map<std::string, std::uint32_t> stacks_;
  std::vector<First> firsts_;
  std::vector<MetadataScope> stack_scopes_;
  std::vector<std::pair<std::size_t, std::size_t>> offsets_;  // into segments
};

}  // namespace

GraphScopes GroupScopes(const Graph& graph, const Rules& rules) {
  GraphScopes out;
  const std::size_t n = graph.size();
  // Reading names (the derived-name rule is a regular expression) and
  // module stacks is per node: the two halves on two cores on a large graph.
  std::vector<NodeScope> read(n);
  std::vector<MetadataScope> stacks[2];
  const std::size_t mid = n / 2;
  RunBoth(n >= kParallelNodes,
          [&] { ReadNodeScopes(graph, rules, mid, n, &read, &stacks[1]); },
          [&] { ReadNodeScopes(graph, rules, 0, mid, &read, &stacks[0]); });
  // Then numbered in node order. A module's nodes usually follow each
  // other, so a node with the previous node's key takes its scope without
  // a lookup.
  constexpr std::uint32_t kNone = ScopeTable::kNone;
  std::vector<std::uint32_t> index(n, kNone);
  ScopeTable table;
  absl::string_view last_key;
  std::uint32_t last = kNone;
  for (std::size_t i = 0; i < n; ++i) {
    const NodeScope& ns = read[i];
    if (ns.named) {
      const absl::string_view key = graph.node(static_cast<NodeId>(i)).name.substr(0, ns.key_size);
      if (last == kNone || key != last_key) {
        last = table.Name(key, i);
        last_key = key;
      }
      index[i] = last;
    } else if (ns.stack != NodeScope::kNoStack) {
      index[i] = table.Stack(std::move(stacks[i < mid ? 0 : 1][ns.stack]));
    }
  }
  std::vector<NodeScope>().swap(read);
  table.Build(graph, &out);
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
  return s.from_metadata
             ? absl::StrCat("module stack ", Abbreviate(s.text, 80))
             : absl::StrCat("scope /", Abbreviate(absl::StrJoin(s.segments, "/"), 80));
}

}  // namespace internal
}  // namespace semmap
