#include "internal/graph_scopes.h"

#include <algorithm>
#include <deque>
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
std::vector<Scope*> SortedScopes(std::deque<Scope>* scopes) {
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

// Registers the scopes of one graph in node order: a scope's struct is
// made the first time its key is met. Segments go to one pool; each
// scope's span into it is set by Finish, once the pool no longer grows.
class ScopeTable {
 public:
  explicit ScopeTable(GraphScopes* out) : out_(out) {}

  // A name scope, keyed by the name's text before its last '/' (a view
  // into the Graph), parsed from `name` the first time.
  Scope* Name(absl::string_view key, absl::string_view name) {
    auto inserted = names_.try_emplace(key, nullptr);
    if (inserted.second) {
      Scope& s = Add();
      s.key = key;
      AddSegments(ScopePath::Parse(name).segments());
      inserted.first->second = &s;
    }
    return inserted.first->second;
  }

  // A module-stack scope; the first node to name it gives its class.
  Scope* Stack(MetadataScope&& stack) {
    auto found = stacks_.find(stack.path);
    if (found != stacks_.end()) return found->second;
    Scope& s = Add();
    s.from_metadata = true;
    s.text = std::move(stack.path);
    s.qualified_class = std::move(stack.qualified_class);
    // s.text lives in the deque's element, which never moves: views of
    // it stay valid.
    std::vector<absl::string_view> atoms = absl::StrSplit(s.text, '.', absl::SkipEmpty());
    AddSegments(atoms);
    stacks_.emplace(s.text, &s);
    return &s;
  }

  void Finish() {
    std::size_t k = 0;
    for (Scope& s : out_->all) {
      s.segments = absl::MakeConstSpan(out_->segments.data() + offsets_[k].first,
                                       offsets_[k].second);
      ++k;
    }
  }

 private:
  Scope& Add() {
    out_->all.emplace_back();
    offsets_.emplace_back(out_->segments.size(), 0);
    return out_->all.back();
  }
  template <typename List>
  void AddSegments(const List& segments) {
    out_->segments.insert(out_->segments.end(), segments.begin(), segments.end());
    offsets_.back().second = segments.size();
  }

  GraphScopes* out_;
  absl::flat_hash_map<absl::string_view, Scope*> names_;
  // Keyed by the path, viewing the scope's own text.
  absl::flat_hash_map<absl::string_view, Scope*> stacks_;
  std::vector<std::pair<std::size_t, std::size_t>> offsets_;  // into segments
};

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
  ScopeTable table(&out);
  absl::string_view last_key;
  Scope* last = nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    NodeScope& ns = read[i];
    Scope* s = nullptr;
    if (ns.kind == NodeScope::Kind::kName) {
      s = last != nullptr && ns.key == last_key
              ? last
              : table.Name(ns.key, graph.node(static_cast<NodeId>(i)).name);
      last = s;
      last_key = ns.key;
    } else if (ns.kind == NodeScope::Kind::kMetadata) {
      s = table.Stack(std::move(stacks[i < mid ? 0 : 1][ns.stack]));
    }
    if (s != nullptr) ++s->nodes;
    out.of_node[i] = s;
  }
  table.Finish();
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
