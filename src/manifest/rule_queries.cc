#include "manifest/rule_queries.h"

#include <algorithm>
#include <memory>

#include "manifest/rules_impl.h"
#include "re2/re2.h"

namespace semmap {
namespace internal {
namespace {

re2::StringPiece Piece(absl::string_view s) { return re2::StringPiece(s.data(), s.size()); }

// The number a pattern captured (0 when it captured nothing); false when
// it holds more than `max_digits` digits or anything else.
bool ParseDigits(re2::StringPiece digits, std::size_t max_digits, std::uint64_t* out) {
  if (digits.size() > max_digits) return false;
  std::uint64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// Whether a rule file's optional single pattern matches `s` somewhere.
bool Matches(const std::unique_ptr<RE2>& pattern, absl::string_view s) {
  return pattern != nullptr && RE2::PartialMatch(Piece(s), *pattern);
}

// The length of `re`'s first match in `s` when it ends where `s` ends and
// is not empty (a suffix the rule names); else 0.
std::size_t SuffixLength(const RE2& re, absl::string_view s) {
  re2::StringPiece match;
  if (re.Match(Piece(s), 0, s.size(), RE2::UNANCHORED, &match, 1) &&
      match.data() + match.size() == s.data() + s.size()) {
    return match.size();
  }
  return 0;
}

}  // namespace

bool RuleQueries::IsDerivedNodeName(absl::string_view name) const {
  return impl_.derived_filter->AnyPartialMatch(name);
}

absl::string_view RuleQueries::DerivedFrom(absl::string_view tensor) const {
  for (const auto& re : impl_.derived_tensor_suffixes) {
    if (const std::size_t n = SuffixLength(*re, tensor); n > 0) {
      tensor.remove_suffix(n);
      return tensor;
    }
  }
  return tensor;
}

absl::string_view RuleQueries::StripValueSuffixes(absl::string_view value) const {
  // Suffixes stack ("_output_0_quantized"): strip until none applies.
  for (int round = 0; round < 8; ++round) {
    bool stripped = false;
    for (const auto& re : impl_.value_suffixes) {
      if (const std::size_t n = SuffixLength(*re, value); n > 0) {
        value.remove_suffix(n);
        stripped = true;
      }
    }
    if (!stripped) break;
  }
  return value;
}

bool RuleQueries::Is(OpKind kind, absl::string_view op_type) const {
  return Matches(impl_.op_kinds[static_cast<std::size_t>(kind)], op_type);
}

bool RuleQueries::IsSignatureChecked(absl::string_view op_type) const {
  return Matches(impl_.signature_checked_onnx, op_type);
}

bool RuleQueries::ExplainsCheckedOps(absl::string_view torch_op) const {
  return Matches(impl_.signature_checked_torch, torch_op);
}

bool RuleQueries::IsFoldedOp(absl::string_view torch_op) const {
  return Matches(impl_.folded_torch, torch_op);
}

bool RuleQueries::OrderKey(absl::string_view name, std::uint64_t* key) const {
  for (const auto& re : impl_.order_keys) {
    re2::StringPiece digits;
    if (RE2::FullMatch(Piece(name), *re, &digits) && !digits.empty()) {
      return ParseDigits(digits, 18, key);
    }
  }
  return false;
}

bool RuleQueries::OpCallName(absl::string_view name, absl::string_view* op,
                             std::uint64_t* call) const {
  for (const auto& re : impl_.op_call_names) {
    re2::StringPiece base, digits;
    if (RE2::FullMatch(Piece(name), *re, &base, &digits) && !base.empty()) {
      *op = absl::string_view(base.data(), base.size());
      // The first call carries no number.
      return ParseDigits(digits, 9, call);
    }
  }
  return false;
}

absl::string_view RuleQueries::OpCallAlias(absl::string_view torch_op) const {
  for (const auto& alias : impl_.op_call_aliases) {
    if (RE2::FullMatch(Piece(torch_op), *alias.torch_re)) return alias.name;
  }
  return torch_op;
}

bool RuleQueries::MayExportAs(absl::string_view torch_op, absl::string_view op_type) const {
  for (const auto& rule : impl_.forward_ops) {
    if (RE2::PartialMatch(Piece(torch_op), *rule.torch_re) &&
        RE2::PartialMatch(Piece(op_type), *rule.onnx_re)) {
      return true;
    }
  }
  return false;
}

bool RuleQueries::ExportedByAnyOp(absl::string_view op_type) const {
  for (const auto& rule : impl_.forward_ops) {
    if (RE2::PartialMatch(Piece(op_type), *rule.onnx_re)) return true;
  }
  return false;
}

bool RuleQueries::IsUncalledModule(const ModuleInfo& module) const {
  return impl_.uncalled_modules && !module.qualified_class.empty() &&
         RE2::PartialMatch(Piece(module.qualified_class), *impl_.uncalled_modules);
}

bool RuleQueries::IsLibraryModule(const ModuleInfo& module) const {
  return impl_.library_modules && !module.qualified_class.empty() &&
         RE2::PartialMatch(Piece(module.qualified_class), *impl_.library_modules);
}

int RuleQueries::ModuleOpsRule(const ModuleInfo& module) const {
  for (std::size_t i = 0; i < impl_.module_ops.size(); ++i) {
    const ModuleOpsPatterns& r = impl_.module_ops[i];
    if (r.class_re && RE2::PartialMatch(Piece(module.class_name), *r.class_re)) return static_cast<int>(i);
    if (r.qualified_re && RE2::PartialMatch(Piece(module.qualified_class), *r.qualified_re)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool RuleQueries::ModuleProduces(int rule, absl::string_view op_type) const {
  return rule >= 0 && static_cast<std::size_t>(rule) < impl_.module_ops.size() &&
         RE2::PartialMatch(Piece(op_type), *impl_.module_ops[rule].ops_re);
}

double RuleQueries::Calibrated(Strategy strategy, double raw, GraphKind kind) const {
  const auto s = static_cast<std::size_t>(strategy);
  // A kind's table speaks from its first point up: below it, that kind's
  // answers were never seen, and the general table answers.
  const auto& own = impl_.calibration_by_kind[static_cast<std::size_t>(kind)][s];
  const auto& points = own.empty() || raw < own.front().first ? impl_.calibration[s] : own;
  // Without points an inferred answer keeps its raw confidence, but below
  // the confident floor all the same (some rules' constants reach it).
  if (points.empty()) return IsInferred(strategy) ? std::min(raw, kInferredCeiling) : raw;
  if (raw <= points.front().first) return points.front().second;
  if (raw >= points.back().first) return points.back().second;
  auto hi = std::upper_bound(points.begin(), points.end(), raw,
                             [](double r, const auto& p) { return r < p.first; });
  auto lo = hi - 1;
  const double t = (raw - lo->first) / (hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

}  // namespace internal
}  // namespace semmap
