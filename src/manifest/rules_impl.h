// What a rule file compiles to (Rules::Impl): the patterns of each rule.
// Read by Rules (rules.cc) and by the mapping's RuleQueries (rule_queries.h);
// the op kinds' keys are one table (op_kinds.h).
#ifndef SEMMAP_SRC_MANIFEST_RULES_IMPL_H_
#define SEMMAP_SRC_MANIFEST_RULES_IMPL_H_

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "manifest/op_kinds.h"
#include "manifest/pattern_prefilter.h"
#include "re2/re2.h"
#include "semmap/strategy.h"
#include "semmap/rules.h"

namespace semmap {
namespace internal {

// Per Strategy: (raw confidence, calibrated confidence) points, raw
// strictly increasing; empty for a strategy reported as computed.
using CalibrationTable = std::array<std::vector<std::pair<double, double>>, kStrategyCount>;

// "categories": a module's semantic category, when its patterns hold.
struct CategoryPatterns {
  std::string name;
  std::unique_ptr<RE2> class_re, qualified_re, path_re;
  bool repeated_child = false;
};

// "module_ops": the ops a parameterless module of a class produces.
struct ModuleOpsPatterns {
  std::unique_ptr<RE2> class_re, qualified_re, ops_re;
};

// "forward_ops": the ONNX op types a torch operation of a manifest's
// forward signature may be exported as.
struct ForwardOpsPatterns {
  std::unique_ptr<RE2> torch_re, onnx_re;
};

// "op_call_aliases": torch ops of the forward signatures whose calls node
// names count under another op's name.
struct OpCallAliasPatterns {
  std::unique_ptr<RE2> torch_re;
  std::string name;
};

}  // namespace internal

struct Rules::Impl {
  std::vector<std::unique_ptr<RE2>> derived_names;
  std::unique_ptr<internal::PatternPrefilter> derived_filter;  // of derived_names
  std::vector<std::unique_ptr<RE2>> value_suffixes;
  // Suffixes of tensors an exporter derived from a parameter, named after
  // it but of another shape ("<weight>_bias").
  std::vector<std::unique_ptr<RE2>> derived_tensor_suffixes;
  // Per OpKind, its key's pattern (null when the file has none).
  std::array<std::unique_ptr<RE2>, internal::kOpKindCount> op_kinds;
  // "signature_checked_ops": ONNX op types and the torch operations that
  // must explain them.
  std::unique_ptr<RE2> signature_checked_onnx;
  std::unique_ptr<RE2> signature_checked_torch;
  // "folded_ops": torch operations an exporter folds into the weights of
  // the op before them.
  std::unique_ptr<RE2> folded_torch;
  std::vector<internal::CategoryPatterns> categories;
  std::unique_ptr<RE2> library_modules;
  std::unique_ptr<RE2> uncalled_modules;
  std::vector<internal::ModuleOpsPatterns> module_ops;
  std::vector<internal::ForwardOpsPatterns> forward_ops;
  std::vector<std::unique_ptr<RE2>> order_keys;
  // "op_call_names": node names carrying the torch op a node computes and
  // its call's number among that op's calls (two capturing groups).
  std::vector<std::unique_ptr<RE2>> op_call_names;
  std::vector<internal::OpCallAliasPatterns> op_call_aliases;
  internal::CalibrationTable calibration;
  // "calibration_by_kind": per GraphKind, tables that replace the general
  // one for their strategies.
  std::array<internal::CalibrationTable, kGraphKindCount> calibration_by_kind;
};

}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_RULES_IMPL_H_
