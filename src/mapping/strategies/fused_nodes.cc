#include "mapping/strategies/fused_nodes.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"

namespace semmap {
namespace internal {
namespace {

// The module's first parameter of rank 2 or more (a Conv's or Linear's
// weight), or null.
const TensorSpec* MatrixWeight(const ModuleInfo& info) {
  for (const TensorSpec& p : info.parameters) {
    if (p.shape.size() >= 2 && p.shape.front() > 0) return &p;
  }
  return nullptr;
}

// True when every tensor of `info` is a scalar or a vector of `channels`
// elements and some buffer is such a vector: a fixed per-channel affine map
// at inference (a BatchNorm's running statistics, weight and bias), which an
// exporter can fold into the weight before it. A LayerNorm or GroupNorm
// computes its statistics from its input and holds no such buffer.
bool FoldablePerChannel(const ModuleInfo& info, std::int64_t channels) {
  bool statistics = false;
  for (const auto* list : {&info.parameters, &info.buffers}) {
    for (const TensorSpec& t : *list) {
      if (t.shape.empty()) continue;
      if (t.shape.size() != 1 || t.shape.front() != channels) return false;
      statistics = statistics || list == &info.buffers;
    }
  }
  return statistics;
}

}  // namespace

ModuleId DominantPart(const Graph& graph, NodeId node, absl::Span<const FusedPart> parts,
                      const Manifest& manifest, const TensorEvidence& tensors) {
  const Node n = graph.node(node);
  std::vector<ModuleId> owners;
  for (absl::string_view input : n.inputs) {
    if (!input.empty()) owners.push_back(tensors.ParameterOwner(input));
  }
  return DominantModule(n.op_type, parts, owners, manifest);
}

// Long (about 55 lines): the candidate pairs from the manifest, then one
// pass over the nodes of their first modules.
void RecordFoldedNeighbours(const MappingContext& context) {
  const Graph& graph = context.graph;
  const Manifest& manifest = context.manifest;
  const OpTraits& ops = context.ops;
  const std::vector<MappingRecord>& mappings = context.records;
  OriginTable* origins = &context.origins;
  std::vector<bool> has_node(manifest.size(), false);
  for (const MappingRecord& m : mappings) {
    if (m.mapped()) has_node[static_cast<std::size_t>(m.module)] = true;
  }
  // C -> the sibling folded into it.
  absl::flat_hash_map<ModuleId, ModuleId> folded_into;
  // Each parent's children are walked once, in order: a module and the
  // sibling after it (searching the siblings for each module was quadratic
  // on a flat model).
  for (const ModuleInfo& parent : manifest.modules()) {
    for (std::size_t k = 0; k + 1 < parent.children.size(); ++k) {
      const ModuleId id = parent.children[k];
      const ModuleInfo& c = manifest.module(id);
      const TensorSpec* weight = MatrixWeight(c);
      if (weight == nullptr || !c.children.empty()) continue;
      const ModuleId next = parent.children[k + 1];
      const ModuleInfo& s = manifest.module(next);
      if (s.children.empty() && !has_node[static_cast<std::size_t>(next)] &&
          FoldablePerChannel(s, weight->shape.front())) {
        folded_into.emplace(id, next);
      }
    }
  }
  if (folded_into.empty()) return;
  // The nodes of each C that compute with what was folded: those reading
  // C's weight (scaled by the folded module) or a vector of C's output
  // channels that C does not hold (the bias the folding made).
  for (std::size_t i = 0; i < mappings.size(); ++i) {
    const ModuleId c = mappings[i].module;
    auto folded = mappings[i].mapped() ? folded_into.find(c) : folded_into.end();
    const NodeId id = static_cast<NodeId>(i);
    if (folded == folded_into.end() || !origins->Of(id).empty() || ops.FollowsConsumers(id) ||
        ops.IsWeightPassthrough(id)) {
      continue;
    }
    const ModuleInfo& info = manifest.module(c);
    const TensorSpec& weight = *MatrixWeight(info);
    const std::int64_t channels = weight.shape.front();
    const std::int64_t weight_elements = ElementCount(weight.shape);  // -1: overflow
    const bool holds_vector = std::any_of(
        info.parameters.begin(), info.parameters.end(),
        [&](const TensorSpec& p) { return p.shape.size() == 1 && p.shape.front() == channels; });
    const Node n = graph.node(id);
    const bool reads_folded = std::any_of(n.inputs.begin(), n.inputs.end(), [&](absl::string_view v) {
      const TensorInfo* t = v.empty() ? nullptr : graph.initializer(v);
      if (t == nullptr || t->dims.empty() || t->dims.front() != channels) return false;
      return (weight_elements >= 0 && ElementCount(t->dims) == weight_elements) ||
             (t->dims.size() == 1 && !holds_vector);
    });
    if (reads_folded) origins->Set(id, {c, folded->second});
  }
}

}  // namespace internal
}  // namespace semmap
