#include "mapping/strategies/forward_signature.h"

#include <algorithm>
#include <cstdint>

#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {
namespace {

// Bounds on the work per gap: the operations expected (calls expanded),
// how deep calls are expanded, and the cells of the alignment table.
constexpr std::size_t kMaxExpected = 4096;
// Events visited and table lookups per gap, calls included: a manifest
// whose modules call each other twice over, level after level, adds no
// operation to count.
constexpr std::size_t kMaxVisited = std::size_t{1} << 16;
// ... and over all gaps of one graph, beside kMaxVisited: this many per
// graph node and manifest event, so that a graph of many gaps over long
// signatures (a module calling an empty one 10^5 times) costs time linear
// in the two.
constexpr std::size_t kVisitsPerItem = 16;
constexpr int kMaxCallDepth = 64;
constexpr std::size_t kMaxCells = std::size_t{1} << 22;
// ... and over all gaps of one graph: a graph of many long gaps matches the
// first ones and leaves the rest to the other rules, in bounded time.
constexpr std::size_t kMaxTotalCells = std::size_t{1} << 27;

}  // namespace

ForwardSignatures::ForwardSignatures(const Manifest& manifest, const Rules& rules,
                                     std::size_t graph_nodes)
    : manifest_(manifest), rules_(rules), cells_left_(kMaxTotalCells), graph_nodes_(graph_nodes) {
  for (const ModuleInfo& info : manifest.modules()) {
    if (info.traced) {
      available_ = true;
      break;
    }
  }
}

void ForwardSignatures::BuildIndex() const {
  indexed_ = true;
  const std::size_t n = manifest_.size();
  index_.assign(n, ModuleIndex{});
  std::size_t events = 0, calls = 0, reads = 0;
  for (const ModuleInfo& info : manifest_.modules()) {
    events += info.forward.size();
    for (const ForwardEvent& e : info.forward) {
      calls += e.call != kNoModule;
      reads += !e.reads.empty();
    }
  }
  calls_.reserve(calls);
  reads_.reserve(reads);
  container_.assign(n, false);
  for (std::size_t m = 0; m < n; ++m) {
    const ModuleInfo& info = manifest_.module(static_cast<ModuleId>(m));
    container_[m] = !info.traced && RuleQueries(rules_).IsUncalledModule(info);
  }
  for (std::size_t m = 0; m < n; ++m) {
    const absl::Span<const ForwardEvent> forward = manifest_.forward(static_cast<ModuleId>(m));
    ModuleIndex& x = index_[m];
    x.calls_begin = calls_.size();
    x.reads_begin = reads_.size();
    x.last_read = forward.size();
    bool called = false;
    for (std::size_t k = 0; k < forward.size(); ++k) {
      const ForwardEvent& e = forward[k];
      if (e.call != kNoModule) {
        called = true;
        if (e.call != static_cast<ModuleId>(m)) calls_.push_back({e.call, k});
      } else if (!e.reads.empty()) {
        reads_.push_back(k);
        x.last_read = k;
        if (!called) x.reads_before_call = k + 1;
      }
    }
    x.calls_end = calls_.size();
    x.reads_end = reads_.size();
    std::sort(calls_.begin() + static_cast<std::ptrdiff_t>(x.calls_begin), calls_.end());
  }
  visits_left_ = kMaxVisited + kVisitsPerItem * (graph_nodes_ + events);
}

bool ForwardSignatures::Charge(std::size_t n) const {
  if (gap_visits_left_ < n || visits_left_ < n) {
    gap_visits_left_ = 0;
    return false;
  }
  gap_visits_left_ -= n;
  visits_left_ -= n;
  return true;
}

bool ForwardSignatures::Matches(absl::string_view torch_op, absl::string_view op_type) const {
  auto key = std::make_pair(torch_op, op_type);
  auto it = matches_.find(key);
  if (it == matches_.end()) {
    it = matches_.emplace(key, RuleQueries(rules_).MayExportAs(torch_op, op_type)).first;
  }
  return it->second;
}

std::size_t ForwardSignatures::CallToward(ModuleId module, ModuleId target,
                                          std::size_t from) const {
  const std::size_t none = manifest_.forward(module).size();
  const ModuleIndex& x = index_[static_cast<std::size_t>(module)];
  const auto first = calls_.begin() + static_cast<std::ptrdiff_t>(x.calls_begin);
  const auto last = calls_.begin() + static_cast<std::ptrdiff_t>(x.calls_end);
  if (first == last) return none;
  std::size_t best = none;
  // The callee is `target` or one of its ancestors (never `module`
  // itself: its calls of itself are not in the table).
  for (ModuleId c = target; c != kNoModule; c = manifest_.parent(c)) {
    if (!Charge(1)) return none;
    const auto it = std::lower_bound(first, last, CallAt{c, from});
    if (it != last && it->callee == c) best = std::min(best, it->event);
  }
  return best;
}

std::size_t ForwardSignatures::LastReadBefore(ModuleId module, std::size_t end) const {
  const ModuleIndex& x = index_[static_cast<std::size_t>(module)];
  const auto first = reads_.begin() + static_cast<std::ptrdiff_t>(x.reads_begin);
  const auto it = std::lower_bound(first, reads_.begin() + static_cast<std::ptrdiff_t>(x.reads_end), end);
  return it == first ? manifest_.forward(module).size() : *(it - 1);
}

std::size_t ForwardSignatures::FirstReadFrom(ModuleId module, std::size_t from) const {
  const ModuleIndex& x = index_[static_cast<std::size_t>(module)];
  const auto last = reads_.begin() + static_cast<std::ptrdiff_t>(x.reads_end);
  const auto it = std::lower_bound(reads_.begin() + static_cast<std::ptrdiff_t>(x.reads_begin), last, from);
  return it == last ? manifest_.forward(module).size() : *it;
}

bool ForwardSignatures::Append(ModuleId module, std::size_t begin, std::size_t end, int depth,
                               std::vector<ExpectedOp>* out) const {
  const absl::Span<const ForwardEvent> events = manifest_.forward(module);
  for (std::size_t k = begin; k < end && k < events.size(); ++k) {
    if (!Charge(1)) return false;
    const ForwardEvent& e = events[k];
    if (e.call == kNoModule) {
      if (out->size() >= kMaxExpected) return false;
      out->push_back({module, e.op});
    } else if (!Expand(e.call, depth + 1, out)) {
      return false;
    }
  }
  return true;
}

bool ForwardSignatures::Expand(ModuleId callee, int depth, std::vector<ExpectedOp>* out) const {
  const ModuleInfo& info = manifest_.module(callee);
  if (depth > kMaxCallDepth || !info.traced) return false;
  return Append(callee, 0, info.forward.size(), depth, out);
}

// Long (about 70 lines): up from A, across the LCA, down to B, each a few
// lookups in the tables and one Append.
bool ForwardSignatures::Between(ModuleId a, ModuleId b, std::vector<ExpectedOp>* out) const {
  out->clear();
  if (!available_ || a == kNoModule || b == kNoModule || a == b) return false;
  if (!indexed_) BuildIndex();
  gap_visits_left_ = kMaxVisited;
  // The way up and down is charged too: a chain thousands of modules deep.
  // A container (a ModuleList of layers) runs no forward: its parent calls
  // its items, and the way skips it.
  ModuleId lca = manifest_.lowestCommonAncestor(a, b);
  if (!Charge(static_cast<std::size_t>(manifest_.depth(a) + manifest_.depth(b)) + 1)) {
    return false;
  }
  while (lca != kNoModule && container_[static_cast<std::size_t>(lca)]) lca = manifest_.parent(lca);
  if (lca == kNoModule || !manifest_.traced(lca)) return false;
  // Up from A: the rest of A's forward from the last operation reading its
  // weights (its other nodes may lie in the gap), then each ancestor's
  // forward after its call toward A.
  if (a != lca) {
    if (!manifest_.traced(a)) return false;
    const std::size_t last = index_[static_cast<std::size_t>(a)].last_read;
    if (!Append(a, last, manifest_.forward(a).size(), 0, out)) return false;
    for (ModuleId m = manifest_.parent(a); m != lca; m = manifest_.parent(m)) {
      if (container_[static_cast<std::size_t>(m)]) continue;
      const ModuleInfo& info = manifest_.module(m);
      if (!info.traced) return false;
      const std::size_t call = CallToward(m, a, 0);
      if (call == info.forward.size()) return false;
      if (!Append(m, call + 1, info.forward.size(), 0, out)) return false;
    }
  }
  // The LCA's own events between its call toward A (or, when A is the
  // LCA, its last weight read before the call toward B) and its call
  // toward B (or its first weight read after that).
  const absl::Span<const ForwardEvent> events = manifest_.forward(lca);
  std::size_t begin = 0;
  if (a == lca) {
    begin = LastReadBefore(lca, CallToward(lca, b, 0));
  } else {
    const std::size_t toward_a = CallToward(lca, a, 0);
    begin = toward_a == events.size() ? events.size() : toward_a + 1;
  }
  if (begin >= events.size()) return false;
  std::size_t end = events.size();
  if (b == lca) {
    const std::size_t read = FirstReadFrom(lca, begin);
    if (read == events.size()) return false;
    end = read + 1;
  } else {
    end = CallToward(lca, b, begin);
    if (end == events.size()) return false;
  }
  if (!Append(lca, begin, end, 0, out)) return false;
  if (b == lca) return true;
  // Down to B: each module's forward before its call toward B.
  std::vector<ModuleId> down;
  for (ModuleId m = b; m != lca; m = manifest_.parent(m)) {
    if (!container_[static_cast<std::size_t>(m)]) down.push_back(m);
  }
  for (std::size_t k = down.size(); k-- > 1;) {
    const ModuleId m = down[k];
    if (!manifest_.traced(m)) return false;
    const std::size_t call = CallToward(m, b, 0);
    if (call == manifest_.forward(m).size()) return false;
    if (!Append(m, 0, call, 0, out)) return false;
  }
  // B's own operations before its first call, up to the last that reads
  // its weights: its anchor is one of those, and the others may be
  // exported before it (a norm's arithmetic before its scale, a weight
  // standardised before its convolution). A library module's operation on
  // its weights is exported with them first (a Linear's MatMul, then its
  // bias Add): none of its nodes comes before its anchor.
  const ModuleInfo& info = manifest_.module(b);
  if (!info.traced || RuleQueries(rules_).IsLibraryModule(info)) return info.traced;
  return Append(b, 0, index_[static_cast<std::size_t>(b)].reads_before_call, 0, out);
}

std::vector<ModuleId> ForwardSignatures::Align(absl::Span<const absl::string_view> op_types,
                                               absl::Span<const ExpectedOp> expected) const {
  const std::size_t n = op_types.size(), m = expected.size();
  std::vector<ModuleId> out(n, kNoModule);
  const std::size_t cells = (n + 1) * (m + 1);
  if (n == 0 || m == 0 || cells > kMaxCells || cells > cells_left_) return out;
  cells_left_ -= cells;
  std::vector<char> fits(n * m);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < m; ++j) fits[i * m + j] = Matches(expected[j].op, op_types[i]);
  }
  // best[i][j]: the most of the first i nodes matched with the first j
  // operations, in order; one operation may be exported as several nodes.
  const std::size_t w = m + 1;
  std::vector<std::uint32_t> best((n + 1) * w, 0);
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      best[i * w + j] = std::max(best[i * w + j - 1],
                                 best[(i - 1) * w + j] + (fits[(i - 1) * m + j - 1] ? 1u : 0u));
    }
  }
  // Two optimal matchings: each node as late, then as early as it can go
  // (late keeps the later operations for the earlier nodes as long as the
  // count allows; early gives them up as soon as it does).
  auto trace = [&](bool late) {
    std::vector<ModuleId> modules(n, kNoModule);
    std::size_t i = n, j = m;
    while (i > 0 && j > 0) {
      const std::uint32_t here = best[i * w + j];
      const bool fit = fits[(i - 1) * m + j - 1] && here == best[(i - 1) * w + j] + 1;
      const bool skip_op = here == best[i * w + j - 1];
      const bool skip_node = here == best[(i - 1) * w + j];
      if (late ? fit : (fit && !skip_op)) {
        modules[i - 1] = expected[j - 1].module;
        --i;
      } else if (late ? !skip_node : skip_op) {
        --j;
      } else {
        --i;  // the node matches nothing here
      }
    }
    return modules;
  };
  const std::vector<ModuleId> late = trace(true), early = trace(false);
  for (std::size_t i = 0; i < n; ++i) {
    if (late[i] == early[i]) out[i] = late[i];
  }
  return out;
}

bool ExpandRoot(const Manifest& manifest, std::size_t graph_nodes, std::vector<ForwardCall>* out) {
  if (manifest.size() == 0 || !manifest.traced(manifest.root())) return false;
  std::size_t all_events = 0;
  for (const ModuleInfo& info : manifest.modules()) all_events += info.forward.size();
  std::size_t budget = kMaxVisited + kVisitsPerItem * (graph_nodes + all_events);
  struct Frame {
    ModuleId module;
    std::size_t next;
  };
  std::vector<Frame> stack = {{manifest.root(), 0}};
  while (!stack.empty()) {
    const ModuleId module = stack.back().module;
    const absl::Span<const ForwardEvent> events = manifest.forward(module);
    if (stack.back().next >= events.size()) {
      stack.pop_back();
      continue;
    }
    if (budget-- == 0) return false;
    const ForwardEvent& e = events[stack.back().next++];
    if (e.call == kNoModule) {
      out->push_back({module, &e});
    } else if (manifest.traced(e.call)) {
      stack.push_back({e.call, 0});
    }
  }
  return true;
}

std::vector<std::vector<std::int64_t>> FirstReads(const Manifest& manifest,
                                                  absl::Span<const ForwardCall> calls) {
  std::vector<std::vector<std::int64_t>> first(manifest.size());
  for (std::size_t m = 0; m < manifest.size(); ++m) {
    first[m].assign(manifest.parameters(static_cast<ModuleId>(m)).size(), -1);
  }
  std::int64_t index = 0;
  for (const ForwardCall& call : calls) {
    const absl::Span<const TensorSpec> params = manifest.parameters(call.module);
    for (absl::string_view read : call.event->reads) {
      for (std::size_t p = 0; p < params.size(); ++p) {
        if (params[p].name != read) continue;
        std::int64_t& at = first[call.module][p];
        if (at < 0) at = index;
        break;
      }
      ++index;
    }
  }
  return first;
}

}  // namespace internal
}  // namespace semmap
