#include "mapping/steps/fit_weights.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "graph/exporter_metadata.h"
#include "graph/node_fields.h"
#include "manifest/rule_queries.h"
#include "mapping/core/weight_shapes.h"

namespace semmap {
namespace internal {
namespace {

// The initializer `value` is, directly or through ops that pass a weight on
// unchanged (a Transpose, a DequantizeLinear, a de-duplication Identity), or
// null. Array lookups only: it runs for every input of a scoped node.
const TensorInfo* InitializerBehind(const Graph& graph, const NodeFields& nodes,
                                    const OpTraits& ops, ValueId value) {
  for (int step = 0; step < 4 && value != kNoValue; ++step) {
    if (const TensorInfo* t = graph.initializerOf(value)) return t;
    const NodeId p = nodes.producer(value);
    if (p == kNoNode || !ops.IsWeightPassthrough(p)) return nullptr;
    const absl::Span<const ValueId> inputs = nodes.inputValues(p);
    if (inputs.empty()) return nullptr;
    value = inputs[0];
  }
  return nullptr;
}

}  // namespace

void CheckLibraryTensors(const Graph& graph, absl::Span<const ModuleId> node_modules,
                         const Manifest& manifest, const Rules& rules, const OpTraits& ops,
                         const TensorEvidence& tensors, ManifestFit* fit,
                         std::string* first_mismatch) {
  const NodeFields nodes(graph);
  std::vector<signed char> library(manifest.size(), -1);  // unknown, no, yes
  // The rule reads only the class: asked once per class (a model has a
  // few dozen classes and up to millions of modules).
  absl::flat_hash_map<absl::string_view, bool> library_class;
  for (std::size_t n = 0; n < node_modules.size() && n < graph.size(); ++n) {
    const ModuleId m = node_modules[n];
    if (m == kNoModule || library[m] == 0) continue;
    const ModuleInfo& info = manifest.module(m);
    if (library[m] < 0) {
      bool is_library = false;
      if (!info.parameters.empty()) {
        auto known = library_class.try_emplace(info.qualified_class);
        if (known.second) known.first->second = internal::RuleQueries(rules).IsLibraryModule(info);
        is_library = known.first->second;
      }
      library[m] = is_library;
    }
    if (library[m] == 0) continue;
    const NodeId id = static_cast<NodeId>(n);
    // A node the exporter's optimizer rewrote from several modules' nodes
    // (a Conv with the BatchNorm after it folded in, labelled with the
    // BatchNorm's stack) computes with another module's weights.
    if (RewrittenByExporter(nodes.metadata(id))) continue;
    const absl::Span<const ValueId> node_inputs = nodes.inputValues(id);
    // A library op reads its weight as one of its first two operands (the
    // embedding table of a Gather, the B of a MatMul, the W of a Conv);
    // later ones are biases, scales and zero points (a 4-bit MatMulNBits'
    // block scales), whose sizes are their own.
    const std::size_t operands = std::min<std::size_t>(node_inputs.size(), 2);
    for (ValueId input : node_inputs.first(operands)) {
      const TensorInfo* t = InitializerBehind(graph, nodes, ops, input);
      if (t == nullptr) continue;
      const std::int64_t have = ElementCount(t->dims);
      if (have < 0) continue;
      if (t->dims.size() < 2 || !IsFloat(t->elem_type)) continue;
      // Named: CheckTensors judges it (as written, or inside a tool's name:
      // "m0/<parameter>" of a prefixing tool).
      if (tensors.LiteralOwner(t->name) != kNoModule || !tensors.EmbeddedParameter(t->name).empty()) {
        continue;
      }
      ++fit->unnamed_weights;
      bool sized = false;
      for (const TensorSpec& spec : info.parameters) sized = sized || ElementCount(spec.shape) == have;
      if (sized) continue;
      if (++fit->weight_size_mismatches == 1) {
        *first_mismatch = absl::StrCat("\"", Abbreviate(std::string(t->name), 80), "\" read by \"",
                                       Abbreviate(std::string(nodes.name(id)), 80), "\" has ", have,
                                       " elements, no parameter of \"", Abbreviate(info.path, 80),
                                       "\" has as many");
      }
    }
  }
}

}  // namespace internal
}  // namespace semmap
