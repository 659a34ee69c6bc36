// What a rule file compiles to (Rules::Impl): the patterns of each rule.
// Read by Rules (rules.cc) and by the mapping's RuleQueries (rule_queries.h).
#ifndef SEMMAP_SRC_MANIFEST_RULES_IMPL_H_
#define SEMMAP_SRC_MANIFEST_RULES_IMPL_H_

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "manifest/pattern_prefilter.h"
#include "re2/re2.h"
#include "semmap/strategy.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// Per Strategy: (raw confidence, calibrated confidence) points, raw
// strictly increasing; empty for a strategy reported as computed.
using CalibrationTable = std::array<std::vector<std::pair<double, double>>, kStrategyCount>;

}  // namespace internal

struct Rules::Impl {
  struct Category {
    std::string name;
    std::unique_ptr<RE2> class_re, qualified_re, path_re;
    bool repeated_child = false;
  };
  std::vector<std::unique_ptr<RE2>> derived_names;
  std::unique_ptr<internal::PatternPrefilter> derived_filter;  // of derived_names
  std::vector<std::unique_ptr<RE2>> value_suffixes;
  // Suffixes of tensors an exporter derived from a parameter, named after
  // it but of another shape ("<weight>_bias").
  std::vector<std::unique_ptr<RE2>> derived_tensor_suffixes;
  std::unique_ptr<RE2> passthrough_ops;
  std::unique_ptr<RE2> follow_consumers_ops;
  std::unique_ptr<RE2> shape_source_ops;
  // "shape_operand_ops": ops whose inputs after the first are arguments of
  // the op (a shape, axes, repeats, bounds).
  std::unique_ptr<RE2> shape_operand_ops;
  // "dequantize_ops": ops turning a quantized tensor back into floats.
  std::unique_ptr<RE2> dequantize_ops;
  std::unique_ptr<RE2> blockwise_weight_ops;
  std::unique_ptr<RE2> transposed_weight_ops;
  // "signature_checked_ops": ONNX op types and the torch operations that
  // must explain them.
  std::unique_ptr<RE2> signature_checked_onnx;
  std::unique_ptr<RE2> signature_checked_torch;
  // "folded_ops": torch operations an exporter folds into the weights of
  // the op before them.
  std::unique_ptr<RE2> folded_torch;
  std::vector<Category> categories;
  std::unique_ptr<RE2> library_modules;
  std::unique_ptr<RE2> uncalled_modules;
  struct ModuleOps {
    std::unique_ptr<RE2> class_re, qualified_re, ops_re;
  };
  std::vector<ModuleOps> module_ops;
  // "forward_ops": the ONNX op types a torch operation of a manifest's
  // forward signature may be exported as.
  struct ForwardOps {
    std::unique_ptr<RE2> torch_re, onnx_re;
  };
  std::vector<ForwardOps> forward_ops;
  std::vector<std::unique_ptr<RE2>> order_keys;
  // "op_call_names": node names carrying the torch op a node computes and
  // its call's number among that op's calls (two capturing groups).
  std::vector<std::unique_ptr<RE2>> op_call_names;
  // "op_call_aliases": torch ops of the forward signatures whose calls
  // those names count under another op's name.
  struct OpCallAlias {
    std::unique_ptr<RE2> torch_re;
    std::string name;
  };
  std::vector<OpCallAlias> op_call_aliases;
  internal::CalibrationTable calibration;
  // "calibration_by_kind": per GraphKind, tables that replace the general
  // one for their strategies.
  std::array<internal::CalibrationTable, kGraphKindCount> calibration_by_kind;
  std::unique_ptr<RE2> quantized_ops;
};

}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_RULES_IMPL_H_
