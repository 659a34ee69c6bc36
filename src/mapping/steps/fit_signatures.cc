#include "mapping/steps/fit_signatures.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "mapping/core/weight_shapes.h"
#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {

OpConflicts CheckSignatureOps(const Graph& graph, absl::Span<const ModuleId> node_modules,
                              const Manifest& manifest, const Rules& rules) {
  OpConflicts out;
  const internal::RuleQueries queries(rules);
  absl::flat_hash_map<absl::string_view, bool> checked_op;
  absl::flat_hash_map<std::pair<ModuleId, absl::string_view>, bool> explained;
  std::vector<bool> counted(manifest.size(), false);
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    const ModuleId m = node_modules[n];
    if (m == kNoModule || !manifest.module(m).traced) continue;
    const absl::string_view op = graph.node(static_cast<NodeId>(n)).op_type;
    auto c = checked_op.find(op);
    if (c == checked_op.end()) c = checked_op.emplace(op, queries.IsSignatureChecked(op)).first;
    if (!c->second) continue;
    ++out.checked;
    // Judged only where the module's forward runs an operation of the kind
    // (a normalisation of its own): a module that computes its norm from
    // means and powers may see a tool fuse them into such a node.
    auto e = explained.find({m, op});
    if (e == explained.end()) {
      bool judged = false;
      bool any = false;
      for (const ForwardEvent& event : manifest.module(m).forward) {
        if (event.call != kNoModule || !queries.ExplainsCheckedOps(event.op)) continue;
        judged = true;
        any = any || queries.MayExportAs(event.op, op);
      }
      e = explained.emplace(std::make_pair(m, op), !judged || any).first;
    }
    if (e->second) continue;
    ++out.unexplained;
    if (!counted[m]) {
      counted[m] = true;
      ++out.modules;
      if (out.first.empty()) {
        out.first = absl::StrCat("\"", Abbreviate(manifest.module(m).path, 80), "\" runs ", op,
                                 " in the graph; no operation of its forward in the manifest is exported as one");
      }
    }
  }
  return out;
}

namespace {

// Initializers read through at most this many nodes computing only from
// initializers.
constexpr int kMaxConstantDepth = 4;
// WeightSize's answers besides an element count.
constexpr std::int64_t kNotWeight = INT64_MIN;
constexpr std::int64_t kAnySize = -1;  // a weight whose size the graph does not say

// The element count of the weight value `v` holds: an initializer, or the
// first input of a chain of nodes computing only from weights. A Constant
// node's output, a graph input without initializer read directly (weights
// given as inputs) and an initializer of unknown dims are weights of any
// size.
// Memoised by value and whether it is read directly (depth 0).
using WeightSizes = absl::flat_hash_map<std::pair<ValueId, bool>, std::int64_t>;

std::int64_t WeightSize(const Graph& graph, ValueId v, int depth, WeightSizes* memo) {
  if (v == kNoValue) return kNotWeight;
  if (const TensorInfo* t = graph.initializerOf(v)) {
    const std::int64_t count = ElementCount(t->dims);
    return count < 0 ? kAnySize : count;
  }
  const NodeId p = graph.producer(v);
  // A graph input read directly; further up, the model's inputs
  // (input_ids) are what activations are computed from.
  if (p == kNoNode) return depth == 0 ? kAnySize : kNotWeight;
  if (depth >= kMaxConstantDepth) return kNotWeight;
  const auto key = std::make_pair(v, depth == 0);
  auto it = memo->find(key);
  if (it != memo->end()) return it->second;
  std::int64_t size = kAnySize;  // a node of no input: a Constant
  bool first = true;
  for (const ValueId input : graph.node(p).input_values) {
    if (input == kNoValue) continue;
    const std::int64_t s = WeightSize(graph, input, depth + 1, memo);
    if (s == kNotWeight) {
      size = kNotWeight;
      break;
    }
    if (first) size = s;  // the others: axes, shapes, scales
    first = false;
  }
  memo->emplace(key, size);
  return size;
}

}  // namespace

namespace {

// Whether a tool put nodes of its own into the graph: a quantizer's, or a
// fusion's outside ONNX's domain. They take parameters from several modules
// under names of their own.
bool HasToolNodes(const Graph& graph, const OpTraits& ops) {
  for (std::size_t n = 0; n < graph.size(); ++n) {
    const Node node = graph.node(static_cast<NodeId>(n));
    if ((!node.domain.empty() && node.domain != "ai.onnx") || ops.IsQuantizerOp(static_cast<NodeId>(n))) {
      return true;
    }
  }
  return false;
}

// The parameters (not buffers: exporters fold those into constants) a
// module's own operations read.
struct OwnReads {
  bool any = false;
  // The element counts of the vector ones, once each (not matrices: an
  // exporter folds a matrix computed from parameters into one).
  std::vector<std::int64_t> vectors;
};

std::vector<OwnReads> OwnParameterReads(const Manifest& manifest) {
  std::vector<OwnReads> out(manifest.size());
  for (std::size_t m = 0; m < manifest.size(); ++m) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(m));
    if (!info.traced || info.parameters.empty()) continue;
    std::vector<absl::string_view> read;
    for (const ForwardEvent& event : info.forward) {
      if (event.call != kNoModule) continue;
      for (const std::string& name : event.reads) {
        for (const TensorSpec& spec : info.parameters) {
          if (spec.name != name) continue;
          out[m].any = true;
          if (spec.shape.size() != 1 ||
              std::find(read.begin(), read.end(), name) != read.end()) {
            continue;
          }
          read.push_back(name);
          out[m].vectors.push_back(spec.shape[0]);
        }
      }
    }
  }
  return out;
}

}  // namespace

ReadShortfalls CheckParameterReads(const Graph& graph, absl::Span<const ModuleId> node_modules,
                                   const Manifest& manifest, const OpTraits& ops) {
  ReadShortfalls out;
  const std::vector<OwnReads> reads = OwnParameterReads(manifest);
  if (std::none_of(reads.begin(), reads.end(), [](const OwnReads& r) { return !r.vectors.empty(); }) ||
      HasToolNodes(graph, ops)) {
    return out;  // no signatures (schema 1), or a tool's graph
  }
  WeightSizes memo;
  // Per module with scoped nodes: the element counts of the weights they read.
  absl::flat_hash_map<ModuleId, std::vector<std::int64_t>> sizes;
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    const ModuleId m = node_modules[n];
    if (m == kNoModule || reads[m].vectors.empty()) continue;
    std::vector<std::int64_t>& seen = sizes[m];
    for (const ValueId input : graph.node(static_cast<NodeId>(n)).input_values) {
      const std::int64_t size = WeightSize(graph, input, 0, &memo);
      if (size != kNotWeight) seen.push_back(size);
    }
  }
  ModuleId first = kNoModule;  // the first in manifest order, whatever the map's order
  std::int64_t first_missing = 0;
  for (const auto& [m, seen] : sizes) {
    ++out.judged;
    if (std::find(seen.begin(), seen.end(), kAnySize) != seen.end()) continue;
    for (const std::int64_t count : reads[m].vectors) {
      if (std::find(seen.begin(), seen.end(), count) != seen.end()) continue;
      ++out.short_of;
      if (first == kNoModule || m < first) {
        first = m;
        first_missing = count;
      }
      break;
    }
  }
  if (first != kNoModule) {
    out.first = absl::StrCat("\"", Abbreviate(manifest.module(first).path, 80),
                             "\" reads a parameter of ", first_missing,
                             " elements in its forward, its nodes no weight of that size");
  }
  return out;
}

namespace {

// The module `m`'s parent calls right after it (no operation of its own in
// between), or kNoModule.
ModuleId CalledNext(const Manifest& manifest, ModuleId m) {
  const ModuleId parent = manifest.module(m).parent;
  if (parent == kNoModule) return kNoModule;
  const std::vector<ForwardEvent>& events = manifest.module(parent).forward;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    if (events[i].call == m) return events[i + 1].call;
  }
  return kNoModule;
}

}  // namespace

FoldConflicts CheckFolds(const Graph& graph, absl::Span<const ModuleId> node_modules,
                         const Manifest& manifest, const Rules& rules, const OpTraits& ops) {
  FoldConflicts out;
  const std::vector<OwnReads> reads = OwnParameterReads(manifest);
  // Modules reading only matrices: the ones a fold gives a bias.
  if (std::none_of(reads.begin(), reads.end(),
                   [](const OwnReads& r) { return r.any && r.vectors.empty(); }) ||
      HasToolNodes(graph, ops)) {
    return out;
  }
  std::vector<std::size_t> own_nodes(manifest.size(), 0);
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    if (node_modules[n] != kNoModule) ++own_nodes[node_modules[n]];
  }
  const internal::RuleQueries queries(rules);
  std::vector<bool> judged(manifest.size(), false);
  ModuleId first = kNoModule;
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    const ModuleId m = node_modules[n];
    if (m == kNoModule || judged[m] || !reads[m].any || !reads[m].vectors.empty()) continue;
    bool gained_bias = false;
    for (const ValueId input : graph.node(static_cast<NodeId>(n)).input_values) {
      const TensorInfo* t = input == kNoValue ? nullptr : graph.initializerOf(input);
      gained_bias = gained_bias || (t != nullptr && t->dims.size() == 1 && t->dims[0] > 1 &&
                                    IsFloat(t->elem_type));
    }
    if (!gained_bias) continue;
    judged[m] = true;
    ++out.folds;
    const ModuleId next = CalledNext(manifest, m);
    if (next == kNoModule || own_nodes[next] > 0 || !reads[next].any) continue;
    bool foldable = false;
    for (const ForwardEvent& event : manifest.module(next).forward) {
      if (event.call == kNoModule && !event.reads.empty() && queries.IsFoldedOp(event.op)) {
        foldable = true;
      }
    }
    if (foldable) continue;
    ++out.conflicts;
    if (first == kNoModule || next < first) first = next;
  }
  if (first != kNoModule) {
    out.first = absl::StrCat("\"", Abbreviate(manifest.module(first).path, 80),
                             "\" has no node, and the weights of the module before it gained its "
                             "bias; its forward runs no operation exporters fold");
  }
  return out;
}

}  // namespace internal
}  // namespace semmap
