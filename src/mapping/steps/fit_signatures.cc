#include "mapping/steps/fit_signatures.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "graph/node_fields.h"
#include "mapping/core/weight_shapes.h"
#include "manifest/rule_queries.h"

namespace semmap {
namespace internal {

OpConflicts CheckSignatureOps(const Graph& graph, absl::Span<const ModuleId> node_modules,
                              const Manifest& manifest, const Rules& rules) {
  OpConflicts out;
  const internal::RuleQueries queries(rules);
  const NodeFields nodes(graph);
  // Per module and per op type, asked once: -1 unknown, else the answer.
  std::vector<signed char> traced(manifest.size(), -1);
  std::vector<signed char> checked_op(nodes.opTypeCount(), -1);
  absl::flat_hash_map<std::pair<ModuleId, absl::string_view>, bool> explained;
  std::vector<bool> counted(manifest.size(), false);
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    const ModuleId m = node_modules[n];
    if (m == kNoModule) continue;
    if (traced[m] < 0) traced[m] = manifest.traced(m);
    if (traced[m] == 0) continue;
    const NodeId id = static_cast<NodeId>(n);
    const absl::string_view op = nodes.opType(id);
    signed char& checked = checked_op[nodes.opTypeIndex(id)];
    if (checked < 0) checked = queries.IsSignatureChecked(op);
    if (checked == 0) continue;
    ++out.checked;
    // Judged only where the module's forward runs an operation of the kind
    // (a normalisation of its own): a module that computes its norm from
    // means and powers may see a tool fuse them into such a node.
    auto e = explained.find({m, op});
    if (e == explained.end()) {
      bool judged = false;
      bool any = false;
      for (const ForwardEvent& event : manifest.forward(m)) {
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
        out.first = absl::StrCat("\"", Abbreviate(manifest.path(m), 80), "\" runs ", op,
                                 " in the graph; no operation of its forward in the manifest is exported as one");
      }
    }
  }
  return out;
}

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

// Per module, the parameters (not buffers: exporters fold those into
// constants) its own operations read: none, only matrices, or a vector.
enum class OwnReads { kNone, kMatrices, kVector };

// One lookup per name read, never a search of the module's parameters: a
// forward reading each of 100,000 parameters once cost 10^10 comparisons.
std::vector<OwnReads> OwnParameterReads(const Manifest& manifest) {
  std::vector<OwnReads> out(manifest.size(), OwnReads::kNone);
  // The module's parameters by name: a vector when any of that name is one.
  absl::flat_hash_map<absl::string_view, bool> is_vector;
  for (std::size_t m = 0; m < manifest.size(); ++m) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(m));
    if (!info.traced || info.parameters.empty()) continue;
    is_vector.clear();
    for (const TensorSpec& spec : info.parameters) is_vector[spec.name] |= spec.shape.size() == 1;
    for (const ForwardEvent& event : info.forward) {
      if (event.call != kNoModule) continue;
      for (absl::string_view name : event.reads) {
        auto it = is_vector.find(name);
        if (it == is_vector.end()) continue;
        if (it->second) {
          out[m] = OwnReads::kVector;
        } else if (out[m] == OwnReads::kNone) {
          out[m] = OwnReads::kMatrices;
        }
      }
    }
  }
  return out;
}

// Per module, the module its parent calls right after its first call of
// it (no operation of its own in between), or kNoModule. One pass over
// every forward: asked module by module, a parent's 10,000 events were
// searched once for each of its children.
std::vector<ModuleId> CalledNext(const Manifest& manifest) {
  std::vector<ModuleId> next(manifest.size(), kNoModule);
  std::vector<bool> seen(manifest.size(), false);
  for (std::size_t p = 0; p < manifest.size(); ++p) {
    const absl::Span<const ForwardEvent> events = manifest.forward(static_cast<ModuleId>(p));
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
      const ModuleId m = events[i].call;
      if (m == kNoModule || seen[m] || manifest.parent(m) != static_cast<ModuleId>(p)) continue;
      seen[m] = true;
      next[m] = events[i + 1].call;
    }
  }
  return next;
}

}  // namespace

FoldConflicts CheckFolds(const Graph& graph, absl::Span<const ModuleId> node_modules,
                         const Manifest& manifest, const Rules& rules, const OpTraits& ops) {
  FoldConflicts out;
  const std::vector<OwnReads> reads = OwnParameterReads(manifest);
  // Modules reading only matrices: the ones a fold gives a bias.
  if (std::find(reads.begin(), reads.end(), OwnReads::kMatrices) == reads.end()) return out;
  std::vector<std::size_t> own_nodes(manifest.size(), 0);
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    if (node_modules[n] != kNoModule) ++own_nodes[node_modules[n]];
  }
  const internal::RuleQueries queries(rules);
  const std::vector<ModuleId> called_next = CalledNext(manifest);
  std::vector<bool> judged(manifest.size(), false);
  ModuleId first = kNoModule;
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    const ModuleId m = node_modules[n];
    if (m == kNoModule || judged[m] || reads[m] != OwnReads::kMatrices) continue;
    bool gained_bias = false;
    for (const ValueId input : NodeFields(graph).inputValues(static_cast<NodeId>(n))) {
      const TensorInfo* t = input == kNoValue ? nullptr : graph.initializerOf(input);
      gained_bias = gained_bias || (t != nullptr && t->dims.size() == 1 && t->dims[0] > 1 &&
                                    IsFloat(t->elem_type));
    }
    if (!gained_bias) continue;
    judged[m] = true;
    ++out.folds;
    const ModuleId next = called_next[m];
    if (next == kNoModule || own_nodes[next] > 0) continue;
    // Judged where the module folded runs a normalisation on its parameters
    // (rules "signature_checked_ops"): a tool may fold other operations
    // (an added bias, a scale) by their values, a normalisation only if
    // exporters fold its kind.
    bool normalises = false;
    bool foldable = false;
    for (const ForwardEvent& event : manifest.forward(next)) {
      if (event.call != kNoModule || event.reads.empty()) continue;
      normalises = normalises || queries.ExplainsCheckedOps(event.op);
      foldable = foldable || queries.IsFoldedOp(event.op);
    }
    if (!normalises || foldable) continue;
    ++out.conflicts;
    if (first == kNoModule || next < first) first = next;
  }
  // A tool's graph is not judged; looked at only when there is something
  // to judge (it walks every node).
  if (out.conflicts > 0 && HasToolNodes(graph, ops)) return FoldConflicts{};
  if (first != kNoModule) {
    out.first = absl::StrCat("\"", Abbreviate(manifest.path(first), 80),
                             "\" has no node, and the weights of the module before it gained its "
                             "bias; its forward runs no normalisation exporters fold");
  }
  return out;
}

}  // namespace internal
}  // namespace semmap
