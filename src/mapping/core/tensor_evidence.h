// Module evidence carried by the names of the values a node reads and
// writes: parameter names ("encoder.layer.0.output.dense.bias") and the
// scoped names TorchScript gives intermediate values
// ("/encoder/layer.0/attention/self/Reshape_3_output_0"), which fused and
// rewritten nodes usually keep on their outputs.
#ifndef SEMMAP_SRC_MAPPING_CORE_TENSOR_EVIDENCE_H_
#define SEMMAP_SRC_MAPPING_CORE_TENSOR_EVIDENCE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/origin_table.h"
#include "mapping/core/scope_resolver.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// At least one in this many of the manifest's parameters must be named by
// an initializer of the graph for its names to say the manifest is this
// model's (NamesManifest): the structural step and the op call places read
// the graph against the manifest only then.
inline constexpr std::size_t kMinNamedShare = 10;

struct TensorFinding {
  ModuleId module = kNoModule;
  double confidence = 0.0;
  std::string evidence;
  // For a node whose outputs are named after the ops of several modules (a
  // fusion that kept its parts' value names): those modules and the owners
  // of the weights it reads. Empty otherwise.
  std::vector<ModuleId> origins;
};

// Reads names under a root binding (RootBinding, mapper.h): the ONNX root
// scope is manifest module `root`, inside the ONNX-only scopes `wrapper`.
// Holds references to its arguments but `wrapper`, which it copies.
class TensorEvidence {
 public:
  TensorEvidence(const Graph& graph, const Manifest& manifest, const Rules& rules,
                 const OpTraits& ops, ModuleId root, absl::Span<const std::string> wrapper);

  // WidenRewritten over every node the exporter's metadata mapped: part of
  // the name steps, so that what follows them (a reference's transfer, the
  // inference) sees a rewritten node as the module whose operation it is.
  // Run once per set of records.
  void WidenRewrittenNodes(std::vector<MappingRecord>* mappings, EvidenceStore* evidence,
                           OriginTable* origins) const;

  // The mapper's tensor-names step, over every node: maps each node
  // still unmapped whose op does not follow its consumers (OpTraits) from
  // ForNode (Strategy::kTensorNames), its confidence multiplied by
  // `factor` (confidence::kNoManifestFactor without a manifest, else 1).
  void MapNodes(double factor, std::vector<MappingRecord>* mappings, EvidenceStore* evidence,
                OriginTable* origins) const;

  // Combines, for one node: the modules owning parameters it produces
  // (strongest: an Identity named after the parameter it stands for), the
  // modules of the scopes its output values are named after, and the
  // modules owning the weights it reads, directly or through pass-through
  // ops (Transpose, Cast, DequantizeLinear...). The answer is their lowest
  // common ancestor, unless the node is a fusion whose output names say
  // which op of which module each part was ("…/layer_norm2/
  // LayerNormalization_output_0" and "…/layers.0/Add_1_output_0" on a
  // SkipLayerNormalization) and one part dominates: the node's op type
  // carries that part's op (OpTypeOverlap) and every weight it reads is
  // that part's module's. Returns false when no name carries evidence.
  bool ForNode(NodeId node, TensorFinding* out) const;

  // A node the exporter's own optimizer rewrote from several nodes (its
  // metadata names the rule, e.g. a Conv with a BatchNorm folded in, which
  // carries the BatchNorm's module stack) that reads parameters of a module
  // outside the one its metadata names does the work of both; both are its
  // origins. When the parameters it reads are one module's, the node still
  // is that module's operation (the Conv, computing with the Conv's weight
  // scaled by the BatchNorm) and `*m` becomes it; parameters of several
  // modules make `*m` their lowest common ancestor with the metadata's.
  // Returns true when `*m` changed.
  bool WidenRewritten(NodeId node, MappingRecord* m, EvidenceStore* evidence,
                      OriginTable* origins) const;

  // True when at least one in `share` of the manifest's parameters is
  // named by an initializer of the graph (under the root binding): the
  // graph's names say the manifest is this model's.
  bool NamesManifest(std::size_t share) const;

  // The module owning the parameter or buffer named `value` under the root
  // binding (as written, else with the rules' value suffixes stripped, else
  // the one whose name a tool embedded in `value`: FindEmbeddedName,
  // base/text.h), or kNoModule.
  ModuleId ParameterOwner(absl::string_view value) const;
  // ParameterOwner() without the embedded names: the name as written or
  // with the rules' suffixes (value suffixes, derived tensors) read.
  ModuleId SuffixedOwner(absl::string_view value) const;
  // The parameter or buffer name a tool embedded in `value`, resolving
  // under the root binding (FindEmbeddedName), or an empty view.
  absl::string_view EmbeddedParameter(absl::string_view value) const;
  // ParameterOwner() of the name exactly as written.
  ModuleId LiteralOwner(absl::string_view value) const;
  // A parameter-named initializer read by more nodes than its module's
  // forward accounts for: equal tensors de-duplicated into one, whose name
  // says nothing of most readers (FindSharedTensors). Weight reads ignore
  // its name.
  bool IsShared(absl::string_view value) const {
    return !shared_.empty() && shared_.contains(value);
  }
  bool AnyShared() const { return !shared_.empty(); }
  // The module of the scope a value name carries, or kNoModule.
  ModuleId ValueScope(absl::string_view value) const;

 private:
  // ParameterOwner() of `value`, or of the tensor it passes through
  // pass-through ops from (not through an Identity); kNoModule for a
  // shared tensor (IsShared).
  ModuleId WeightOwner(absl::string_view value, ValueId v, int depth) const;
  // ParameterOwner() of value `v` named `name`, asked once per value
  // (owner_cache_); a name defined nowhere (kNoValue) each time.
  ModuleId OwnerOfValue(ValueId v, absl::string_view name) const;
  // Parameter-named initializers read by more nodes than their module's
  // forward can account for (forward signatures: its calls times its
  // operations reading the parameter; without them, one node, unless the
  // graph shows a layer called several times): an exporter or tool
  // de-duplicated equal tensors (the zero biases and unit norm weights of a
  // freshly initialised model) into one, named after one of them, so the
  // name says nothing of most readers.
  void FindSharedTensors();

  const Graph& graph_;
  const Manifest& manifest_;
  const Rules& rules_;
  const OpTraits& ops_;
  const ModuleId root_;
  const std::vector<std::string> wrapper_;
  ScopeResolver resolver_;
  std::string root_prefix_;     // "<root path>." or ""
  std::string wrapper_prefix_;  // "<wrapper atoms joined by .>." or ""
  mutable absl::flat_hash_map<std::string, ModuleId> scope_cache_;
  // OwnerOfValue() per value id, kOwnerUnknown until asked; safe to fill
  // from two threads (each writes the same answer).
  static constexpr ModuleId kOwnerUnknown = -2;
  std::unique_ptr<std::atomic<ModuleId>[]> owner_cache_;
  absl::flat_hash_set<absl::string_view> shared_;  // FindSharedTensors()
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_TENSOR_EVIDENCE_H_
