// RuleQueries: what the mapping asks of a rule file, kept out of the public
// Rules (rules.h) so that the rule file's public surface is loading it and
// the modules' categories. A view of one Rules: cheap to make, valid while
// the Rules lives, thread-safe like it.
//
//   if (RuleQueries(rules).Is(OpKind::kFollowsConsumers, node.op_type)) ...
#ifndef SEMMAP_SRC_MANIFEST_RULE_QUERIES_H_
#define SEMMAP_SRC_MANIFEST_RULE_QUERIES_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "manifest/op_kinds.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"
#include "semmap/strategy.h"

namespace semmap {
namespace internal {

// The highest confidence an inferred answer reports (scripts/fit-calibration
// caps its points at it too): below kConfidentFloor (semmap/strategy.h).
inline constexpr double kInferredCeiling = 0.89;

class RuleQueries {
 public:
  explicit RuleQueries(const Rules& rules) : impl_(*rules.impl_) {}

  // A node name built from a value name ("<value>_QuantizeLinear"): its
  // scope describes the value's producer, not the node.
  bool IsDerivedNodeName(absl::string_view name) const;
  // `value` without the optimizer/exporter suffixes of value names
  // ("/a/MatMul_output_0_quantized" -> "/a/MatMul").
  absl::string_view StripValueSuffixes(absl::string_view value) const;
  // The parameter `tensor` was derived from, when a "derived_tensor_suffixes"
  // rule matches its end ("conv.weight_bias" -> "conv.weight": the bias an
  // exporter folded into that Conv); `tensor` itself otherwise. Its shape is
  // not the parameter's: for ownership only, never for shape checks.
  absl::string_view DerivedFrom(absl::string_view tensor) const;
  // Whether `op_type` is of `kind`: its rule's pattern (op_kinds.h)
  // matches it; false when the rule file has none.
  bool Is(OpKind kind, absl::string_view op_type) const;
  // ONNX ops a scoped node's module must run in its recorded forward, and
  // the torch operations of such a forward that may explain them (rules
  // "signature_checked_ops"; the manifest fit check).
  bool IsSignatureChecked(absl::string_view op_type) const;
  bool ExplainsCheckedOps(absl::string_view torch_op) const;
  // A torch operation exporters fold into the weights of the op before it
  // (rules "folded_ops"; the manifest fit check).
  bool IsFoldedOp(absl::string_view torch_op) const;
  // A module of the framework's own library (torch.nn.Linear, LayerNorm,
  // containers...): its forward is one library op on its parameters, so it
  // owns the nodes reading them and nothing else; a container owns none.
  bool IsLibraryModule(const ModuleInfo& module) const;
  // A container that is never called (torch.nn.ModuleList, ModuleDict):
  // it is on no call stack, so exporters' namespaces have no level for it
  // and Annotate's namespace skips it.
  bool IsUncalledModule(const ModuleInfo& module) const;
  // Index of the first "module_ops" rule matching a parameterless module's
  // class, or -1: the ops such a module produces (an activation's Relu, a
  // pooling module's MaxPool), which identify its nodes in a graph without
  // names.
  int ModuleOpsRule(const ModuleInfo& module) const;
  // The confidence reported for a `strategy` answer computed at `raw` in a
  // graph of `kind`: the rule file's calibration points for that kind
  // ("calibration_by_kind") from their first raw value up, else its
  // general ones ("calibration"),
  // interpolated linearly (clamped at the ends), or `raw` when the file
  // calibrates no such strategy (at most kInferredCeiling for an inferred
  // one, IsInferred). Never decreasing in `raw`; below kConfidentFloor for
  // an inferred strategy.
  double Calibrated(Strategy strategy, double raw, GraphKind kind = GraphKind::kNamed) const;
  // True when `op_type` is one rule `ModuleOpsRule()` returned produces.
  bool ModuleProduces(int rule, absl::string_view op_type) const;
  // The creation counter an exporter wrote into a node or value name
  // ("node_MatMul_55", "val_93" -> 55, 93: the dynamo exporter numbers what
  // it creates in execution order), when an "order_keys" rule matches.
  bool OrderKey(absl::string_view name, std::uint64_t* key) const;
  // The torch op a node name says the node computes and the number of that
  // op's calls before it in the forward ("node_linear_4" -> "linear", 4;
  // "node_linear" -> "linear", 0: the dynamo exporter names a node after
  // the FX node whose output it computes), when an "op_call_names" rule
  // matches. `op` views `name`.
  bool OpCallName(absl::string_view name, absl::string_view* op, std::uint64_t* call) const;
  // The name under which those node names count the calls of `torch_op`,
  // an op of a manifest's forward signature ("to" -> "_to_copy": rules
  // "op_call_aliases"); `torch_op` itself when no alias applies.
  absl::string_view OpCallAlias(absl::string_view torch_op) const;
  // True when a "forward_ops" rule says the torch operation `torch_op` of a
  // manifest's forward signature ("add", "layer_norm") may be exported as
  // an `op_type` node.
  bool MayExportAs(absl::string_view torch_op, absl::string_view op_type) const;
  // True when some "forward_ops" rule exports an `op_type` node: a type the
  // rules know (a MatMulNBits, which no rule lists, is not judged by them).
  bool ExportedByAnyOp(absl::string_view op_type) const;

 private:
  const Rules::Impl& impl_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_RULE_QUERIES_H_
