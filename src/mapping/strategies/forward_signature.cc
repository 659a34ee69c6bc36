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
// Events visited per gap, calls included: a manifest whose modules call
// each other twice over, level after level, adds no operation to count.
constexpr std::size_t kMaxVisited = std::size_t{1} << 16;
constexpr int kMaxCallDepth = 64;
constexpr std::size_t kMaxCells = std::size_t{1} << 22;
// ... and over all gaps of one graph: a graph of many long gaps matches the
// first ones and leaves the rest to the other rules, in bounded time.
constexpr std::size_t kMaxTotalCells = std::size_t{1} << 27;

}  // namespace

ForwardSignatures::ForwardSignatures(const Manifest& manifest, const Rules& rules)
    : manifest_(manifest), rules_(rules), cells_left_(kMaxTotalCells) {
  for (const ModuleInfo& info : manifest.modules()) {
    if (info.traced) {
      available_ = true;
      break;
    }
  }
}

bool ForwardSignatures::Matches(absl::string_view torch_op, absl::string_view op_type) const {
  auto key = std::make_pair(torch_op, op_type);
  auto it = matches_.find(key);
  if (it == matches_.end()) {
    it = matches_.emplace(key, RuleQueries(rules_).mayExportAs(torch_op, op_type)).first;
  }
  return it->second;
}

std::size_t ForwardSignatures::CallToward(ModuleId module, ModuleId target,
                                          std::size_t from) const {
  const std::vector<ForwardEvent>& events = manifest_.module(module).forward;
  for (std::size_t k = from; k < events.size(); ++k) {
    const ModuleId callee = events[k].call;
    if (callee != kNoModule && callee != module && manifest_.isAncestorOrSelf(callee, target)) {
      return k;
    }
  }
  return events.size();
}

std::size_t ForwardSignatures::LastRead(ModuleId module) const {
  const std::vector<ForwardEvent>& events = manifest_.module(module).forward;
  for (std::size_t k = events.size(); k-- > 0;) {
    if (!events[k].reads.empty()) return k;
  }
  return events.size();
}

bool ForwardSignatures::Append(ModuleId module, std::size_t begin, std::size_t end, int depth,
                               std::vector<ExpectedOp>* out) const {
  const std::vector<ForwardEvent>& events = manifest_.module(module).forward;
  for (std::size_t k = begin; k < end && k < events.size(); ++k) {
    if (visited_++ >= kMaxVisited) return false;
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

bool ForwardSignatures::Between(ModuleId a, ModuleId b, std::vector<ExpectedOp>* out) const {
  out->clear();
  visited_ = 0;
  if (!available_ || a == kNoModule || b == kNoModule || a == b) return false;
  const ModuleId lca = manifest_.lowestCommonAncestor(a, b);
  if (lca == kNoModule || !manifest_.module(lca).traced) return false;
  // Up from A: the rest of A's forward from the last operation reading its
  // weights (its other nodes may lie in the gap), then each ancestor's
  // forward after its call toward A.
  if (a != lca) {
    if (!manifest_.module(a).traced) return false;
    const std::size_t last = LastRead(a);
    if (!Append(a, last, manifest_.module(a).forward.size(), 0, out)) return false;
    for (ModuleId m = manifest_.module(a).parent; m != lca; m = manifest_.module(m).parent) {
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
  const std::vector<ForwardEvent>& events = manifest_.module(lca).forward;
  std::size_t begin = 0;
  if (a == lca) {
    const std::size_t toward_b = CallToward(lca, b, 0);
    begin = events.size();
    for (std::size_t k = 0; k < toward_b && k < events.size(); ++k) {
      if (!events[k].reads.empty()) begin = k;
    }
  } else {
    const std::size_t toward_a = CallToward(lca, a, 0);
    begin = toward_a == events.size() ? events.size() : toward_a + 1;
  }
  if (begin >= events.size()) return false;
  std::size_t end = events.size();
  if (b == lca) {
    for (std::size_t k = begin; k < events.size() && end == events.size(); ++k) {
      if (!events[k].reads.empty()) end = k + 1;
    }
    if (end == events.size() && events.back().reads.empty()) return false;
  } else {
    end = CallToward(lca, b, begin);
    if (end == events.size()) return false;
  }
  if (!Append(lca, begin, end, 0, out)) return false;
  if (b == lca) return true;
  // Down to B: each module's forward before its call toward B.
  std::vector<ModuleId> down;
  for (ModuleId m = b; m != lca; m = manifest_.module(m).parent) down.push_back(m);
  for (std::size_t k = down.size(); k-- > 1;) {
    const ModuleId m = down[k];
    if (!manifest_.module(m).traced) return false;
    const std::size_t call = CallToward(m, b, 0);
    if (call == manifest_.module(m).forward.size()) return false;
    if (!Append(m, 0, call, 0, out)) return false;
  }
  // B's own operations before its first call, up to the last that reads
  // its weights: its anchor is one of those, and the others may be
  // exported before it (a norm's arithmetic before its scale, a weight
  // standardised before its convolution). A library module's operation on
  // its weights is exported with them first (a Linear's MatMul, then its
  // bias Add): none of its nodes comes before its anchor.
  const ModuleInfo& info = manifest_.module(b);
  if (!info.traced || RuleQueries(rules_).isLibraryModule(info)) return info.traced;
  std::size_t last = 0;
  for (std::size_t k = 0; k < info.forward.size() && info.forward[k].call == kNoModule; ++k) {
    if (!info.forward[k].reads.empty()) last = k + 1;
  }
  return Append(b, 0, last, 0, out);
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

}  // namespace internal
}  // namespace semmap
