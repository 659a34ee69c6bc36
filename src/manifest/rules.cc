#include "semmap/rules.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "io/file_io.h"
#include "io/json_reader.h"
#include "manifest/default_rules.h"
#include "manifest/pattern_prefilter.h"
#include "manifest/rules_impl.h"
#include "re2/re2.h"
#include "semmap/strategy.h"

namespace semmap {
namespace {

using internal::JsonValue;

constexpr int kRulesVersion = 1;
// `[`/`{` levels; a rule file needs four.
constexpr int kMaxJsonNesting = 64;
constexpr std::size_t kMaxPatternBytes = 4096;
constexpr std::int64_t kMaxProgramMemory = 1 << 20;  // per pattern, as RE2 caps it
constexpr std::uint64_t kMaxRuleFileBytes = 16 << 20;
// For all patterns of a file together: a file of many patterns each under
// kMaxProgramMemory must not take minutes to compile or gigabytes to hold.
constexpr std::int64_t kMaxTotalProgramMemory = 16 << 20;
constexpr int kMaxPatterns = 1024;
// RE2 grants a program about a 64th of max_mem in instructions (16 bytes
// each, a quarter of the budget): a pattern is charged what it used.
constexpr std::int64_t kBytesPerInstruction = 64;

// What the patterns compiled so far used of the file's budget.
struct ProgramBudget {
  std::int64_t used = 0;
  int patterns = 0;
};

re2::StringPiece Piece(absl::string_view s) { return re2::StringPiece(s.data(), s.size()); }

}  // namespace


namespace {

absl::Status TotalBudgetExceeded(const JsonValue& value) {
  return value.Error(absl::StrCat(
      "the file's patterns together are above the compiled size limit (",
      kMaxTotalProgramMemory, " bytes of RE2 program memory)"));
}

absl::StatusOr<std::unique_ptr<RE2>> Compile(const JsonValue& value, ProgramBudget* budget) {
  if (!value.is_string()) return value.Error("expected a pattern string");
  const absl::string_view pattern = value.string();
  if (pattern.empty() || pattern.size() > kMaxPatternBytes) {
    return value.Error(absl::StrCat("pattern must be 1 to ", kMaxPatternBytes, " bytes"));
  }
  if (++budget->patterns > kMaxPatterns) {
    return value.Error(absl::StrCat("more than ", kMaxPatterns, " patterns in one file"));
  }
  const std::int64_t left = kMaxTotalProgramMemory - budget->used;
  if (left <= 0) return TotalBudgetExceeded(value);
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(std::min(kMaxProgramMemory, left));
  auto re = std::make_unique<RE2>(Piece(pattern), options);
  if (!re->ok() && left < kMaxProgramMemory && re->error_code() == RE2::ErrorPatternTooLarge) {
    return TotalBudgetExceeded(value);
  }
  if (re->ok()) budget->used += kBytesPerInstruction * re->ProgramSize();
  if (!re->ok()) {
    return value.Error(absl::StrCat("invalid pattern \"",
                                    internal::Abbreviate(std::string(pattern), 80), "\": ",
                                    internal::Abbreviate(re->error(), 200)));
  }
  return re;
}

// The value of `key` in `object`, compiled, when `object` is an object with
// that key; otherwise `shape` (the expected form) at `object`.
absl::StatusOr<std::unique_ptr<RE2>> CompileMember(const JsonValue& object, absl::string_view key,
                                                   absl::string_view shape,
                                                   ProgramBudget* budget) {
  std::optional<JsonValue> member = object.is_object() ? object.Find(key) : std::nullopt;
  if (!member) return object.Error(shape);
  return Compile(*member, budget);
}

absl::Status CompileList(const JsonValue& doc, absl::string_view key, ProgramBudget* budget,
                         std::vector<std::unique_ptr<RE2>>* out) {
  const std::optional<JsonValue> list = doc.Find(key);
  if (!list) return absl::OkStatus();
  if (!list->is_array()) return list->Error("expected an array");
  return list->ForEachElement([&](const JsonValue& entry) -> absl::Status {
    SEMMAP_ASSIGN_OR_RETURN(auto re,
                            CompileMember(entry, "pattern", "expected {\"pattern\": ...}", budget));
    out->push_back(std::move(re));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::unique_ptr<RE2>> CompileSingle(const JsonValue& doc, absl::string_view key,
                                                   absl::string_view field,
                                                   ProgramBudget* budget) {
  const std::optional<JsonValue> rule = doc.Find(key);
  if (!rule) return std::unique_ptr<RE2>();
  return CompileMember(*rule, field, absl::StrCat("expected {\"", field, "\": ...}"), budget);
}

}  // namespace

Rules::Rules(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Rules::Rules(Rules&&) noexcept = default;
Rules& Rules::operator=(Rules&&) noexcept = default;
Rules::~Rules() = default;

const Rules& Rules::Default() {
  static const Rules* rules = [] {
    auto parsed = Parse(internal::kDefaultRulesJson, "rules/default.json");
    // The default rules are tested; failing here is a build defect.
    if (!parsed.ok()) std::abort();
    return new Rules(*std::move(parsed));
  }();
  return *rules;
}

namespace {

// "calibration": {"<strategy name>": [[raw, calibrated], ...], ...}: raw
// confidences strictly increasing in [0, 1], calibrated ones in (0, 1] and
// never decreasing (a more confident raw answer is never reported as less
// so); an inferred strategy's (IsInferred) below kConfidentFloor, since
// only evidence may be confident; none for "unmapped", which is always 0.
absl::Status ParseCalibrationTable(const JsonValue& calibration, internal::CalibrationTable* tables) {
  if (!calibration.is_object()) return calibration.Error("expected an object");
  return calibration.ForEachField([&](absl::string_view name, const JsonValue& points) {
    if (name == "description") return absl::OkStatus();
    Strategy strategy;
    if (!ParseStrategy(name, &strategy)) return points.Error("not a strategy name");
    if (strategy == Strategy::kUnmapped) {
      return points.Error("an unmapped node's confidence is always 0: it has no calibration");
    }
    if (!points.is_array() || points.size() == 0) {
      return points.Error("expected a non-empty array of [raw, calibrated] pairs");
    }
    auto& table = (*tables)[static_cast<std::size_t>(strategy)];
    return points.ForEachElement([&](const JsonValue& point) {
      if (!point.is_array() || point.size() != 2) return point.Error("expected [raw, calibrated]");
      double pair[2] = {0, 0};
      std::size_t k = 0;
      absl::Status status = point.ForEachElement([&](const JsonValue& x) {
        if (!x.is_number()) return x.Error("expected a number");
        pair[k++] = x.number();
        return absl::OkStatus();
      });
      if (!status.ok()) return status;
      if (!(pair[0] >= 0 && pair[0] <= 1) || !(pair[1] > 0 && pair[1] <= 1)) {
        return point.Error("raw must lie in [0, 1] and calibrated in (0, 1]");
      }
      if (!table.empty() && !(pair[0] > table.back().first)) {
        return point.Error("raw confidences must increase");
      }
      if (!table.empty() && pair[1] < table.back().second) {
        return point.Error(absl::StrCat(
            "calibrated confidences must not decrease as raw ones increase (", pair[1],
            " after ", table.back().second, ")"));
      }
      if (IsInferred(strategy) && !(pair[1] < kConfidentFloor)) {
        return point.Error(absl::StrCat(
            name, " infers its answers: reported confidences must stay below the confident floor ",
            kConfidentFloor, ", got ", pair[1]));
      }
      table.emplace_back(pair[0], pair[1]);
      return absl::OkStatus();
    });
  });
}

absl::Status ParseCalibration(const JsonValue& doc, internal::CalibrationTable* tables) {
  const std::optional<JsonValue> calibration = doc.Find("calibration");
  if (!calibration) return absl::OkStatus();
  return ParseCalibrationTable(*calibration, tables);
}

// "calibration_by_kind": {"<graph kind>": {<a "calibration" object>}, ...}.
absl::Status ParseCalibrationByKind(
    const JsonValue& doc, std::array<internal::CalibrationTable, kGraphKindCount>* tables) {
  const std::optional<JsonValue> by_kind = doc.Find("calibration_by_kind");
  if (!by_kind) return absl::OkStatus();
  if (!by_kind->is_object()) return by_kind->Error("expected an object");
  return by_kind->ForEachField([&](absl::string_view name, const JsonValue& table) {
    if (name == "description") return absl::OkStatus();
    GraphKind kind;
    if (!ParseGraphKind(name, &kind)) {
      return table.Error("not a graph kind (named, unnamed or quantized)");
    }
    return ParseCalibrationTable(table, &(*tables)[static_cast<std::size_t>(kind)]);
  });
}

// "format" and "version": a semmap rule file this build reads.
absl::Status CheckFormat(const JsonValue& doc, absl::string_view origin) {
  const std::optional<JsonValue> format = doc.Find("format");
  if (!format || !format->is_string() || format->string() != "semmap.rules") {
    return doc.ErrorAt("format", "not a semmap rule file (expected \"format\": \"semmap.rules\")");
  }
  const std::optional<JsonValue> version = doc.Find("version");
  if (!version || !version->is_integer() || version->is_unsigned() ||
      version->int64() != kRulesVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(origin, ": /version: this build reads rule files of version ", kRulesVersion));
  }
  return absl::OkStatus();
}

// Each op kind's {"pattern"} (op_kinds.h), in the table's order.
absl::Status ParseOpKinds(const JsonValue& doc, ProgramBudget* budget,
                          std::array<std::unique_ptr<RE2>, internal::kOpKindCount>* out) {
  for (std::size_t k = 0; k < internal::kOpKindCount; ++k) {
    SEMMAP_ASSIGN_OR_RETURN((*out)[k], CompileSingle(doc, internal::kOpKindKeys[k], "pattern", budget));
    if ((*out)[k] == nullptr && internal::InheritedWhenAbsent(static_cast<internal::OpKind>(k))) {
      // The default file has every key, so this never recurses into itself.
      SEMMAP_ASSIGN_OR_RETURN(
          const internal::JsonDocument defaults,
          internal::JsonDocument::Parse(internal::kDefaultRulesJson, "rules/default.json",
                                        {kMaxRuleFileBytes, kMaxJsonNesting}));
      SEMMAP_ASSIGN_OR_RETURN((*out)[k], CompileSingle(defaults.root(), internal::kOpKindKeys[k],
                                                       "pattern", budget));
    }
  }
  return absl::OkStatus();
}

// CompileList of `key`, each pattern with exactly `groups` capturing groups
// (`what`: which, for the error).
absl::Status CompileCapturingList(const JsonValue& doc, absl::string_view origin,
                                  absl::string_view key, int groups, absl::string_view what,
                                  ProgramBudget* budget, std::vector<std::unique_ptr<RE2>>* out) {
  SEMMAP_RETURN_IF_ERROR(CompileList(doc, key, budget, out));
  for (std::size_t i = 0; i < out->size(); ++i) {
    if ((*out)[i]->NumberOfCapturingGroups() != groups) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": /", key, "/", i, "/pattern: needs exactly ", what));
    }
  }
  return absl::OkStatus();
}

// "categories": an ordered list of {"category", "class", "qualified_class",
// "path", "repeated_child"}.
absl::Status ParseCategories(const JsonValue& doc, ProgramBudget* budget,
                             std::vector<internal::CategoryPatterns>* out) {
  const std::optional<JsonValue> categories = doc.Find("categories");
  if (!categories) return absl::OkStatus();
  if (!categories->is_array()) return categories->Error("expected an array");
  return categories->ForEachElement([&](const JsonValue& c) -> absl::Status {
    static constexpr absl::string_view kKeys[] = {"category", "class", "qualified_class", "path",
                                                  "repeated_child"};
    std::optional<JsonValue> f[5];
    c.Lookup(kKeys, absl::MakeSpan(f));
    if (!c.is_object() || !f[0] || !f[0]->is_string()) {
      return c.Error("expected {\"category\": \"...\", ...}");
    }
    internal::CategoryPatterns cat;
    cat.name = std::string(f[0]->string());
    if (f[1]) {
      SEMMAP_ASSIGN_OR_RETURN(cat.class_re, Compile(*f[1], budget));
    }
    if (f[2]) {
      SEMMAP_ASSIGN_OR_RETURN(cat.qualified_re, Compile(*f[2], budget));
    }
    if (f[3]) {
      SEMMAP_ASSIGN_OR_RETURN(cat.path_re, Compile(*f[3], budget));
    }
    if (f[4]) {
      if (!f[4]->is_boolean()) return f[4]->Error("expected true or false");
      cat.repeated_child = f[4]->boolean();
    }
    if (!cat.class_re && !cat.qualified_re && !cat.path_re && !cat.repeated_child) {
      return c.Error("a category needs class, qualified_class, path or repeated_child");
    }
    out->push_back(std::move(cat));
    return absl::OkStatus();
  });
}

// "op_call_aliases": a list of {"torch", "name"}.
absl::Status ParseOpCallAliases(const JsonValue& doc, ProgramBudget* budget,
                                std::vector<internal::OpCallAliasPatterns>* out) {
  const std::optional<JsonValue> aliases = doc.Find("op_call_aliases");
  if (!aliases) return absl::OkStatus();
  if (!aliases->is_array()) return aliases->Error("expected an array");
  return aliases->ForEachElement([&](const JsonValue& r) -> absl::Status {
    static constexpr absl::string_view kKeys[] = {"torch", "name"};
    std::optional<JsonValue> f[2];
    if (r.is_object()) r.Lookup(kKeys, absl::MakeSpan(f));
    if (!f[0] || !f[1] || !f[1]->is_string()) {
      return r.Error("expected {\"torch\": ..., \"name\": \"...\"}");
    }
    internal::OpCallAliasPatterns alias;
    SEMMAP_ASSIGN_OR_RETURN(alias.torch_re, Compile(*f[0], budget));
    alias.name = std::string(f[1]->string());
    out->push_back(std::move(alias));
    return absl::OkStatus();
  });
}

// "module_ops": an ordered list of {"class" or "qualified_class", "ops"}.
absl::Status ParseModuleOps(const JsonValue& doc, ProgramBudget* budget,
                            std::vector<internal::ModuleOpsPatterns>* out) {
  const std::optional<JsonValue> module_ops = doc.Find("module_ops");
  if (!module_ops) return absl::OkStatus();
  if (!module_ops->is_array()) return module_ops->Error("expected an array");
  return module_ops->ForEachElement([&](const JsonValue& r) -> absl::Status {
    static constexpr absl::string_view kKeys[] = {"class", "qualified_class", "ops"};
    std::optional<JsonValue> f[3];
    r.Lookup(kKeys, absl::MakeSpan(f));
    if (!r.is_object() || !f[2] || (!f[0] && !f[1])) {
      return r.Error("expected {\"class\" or \"qualified_class\": ..., \"ops\": ...}");
    }
    internal::ModuleOpsPatterns rule;
    if (f[0]) {
      SEMMAP_ASSIGN_OR_RETURN(rule.class_re, Compile(*f[0], budget));
    }
    if (f[1]) {
      SEMMAP_ASSIGN_OR_RETURN(rule.qualified_re, Compile(*f[1], budget));
    }
    SEMMAP_ASSIGN_OR_RETURN(rule.ops_re, Compile(*f[2], budget));
    out->push_back(std::move(rule));
    return absl::OkStatus();
  });
}

// "forward_ops": a list of {"torch", "onnx"}.
absl::Status ParseForwardOps(const JsonValue& doc, ProgramBudget* budget,
                             std::vector<internal::ForwardOpsPatterns>* out) {
  const std::optional<JsonValue> forward_ops = doc.Find("forward_ops");
  if (!forward_ops) return absl::OkStatus();
  if (!forward_ops->is_array()) return forward_ops->Error("expected an array");
  return forward_ops->ForEachElement([&](const JsonValue& r) -> absl::Status {
    static constexpr absl::string_view kKeys[] = {"torch", "onnx"};
    std::optional<JsonValue> f[2];
    if (r.is_object()) r.Lookup(kKeys, absl::MakeSpan(f));
    if (!f[0] || !f[1]) return r.Error("expected {\"torch\": ..., \"onnx\": ...}");
    internal::ForwardOpsPatterns rule;
    SEMMAP_ASSIGN_OR_RETURN(rule.torch_re, Compile(*f[0], budget));
    SEMMAP_ASSIGN_OR_RETURN(rule.onnx_re, Compile(*f[1], budget));
    out->push_back(std::move(rule));
    return absl::OkStatus();
  });
}

}  // namespace

absl::StatusOr<Rules> Rules::Load(const std::string& path) {
  SEMMAP_ASSIGN_OR_RETURN(std::string text, internal::ReadFile(path, kMaxRuleFileBytes));
  return Parse(text, path);
}

// One step per key or group of keys, in the file's order (docs/rules.md):
// the patterns are charged to one budget in this order, and the first
// error found is the one reported.
absl::StatusOr<Rules> Rules::Parse(absl::string_view text, absl::string_view origin) try {
  SEMMAP_ASSIGN_OR_RETURN(
      const internal::JsonDocument json,
      internal::JsonDocument::Parse(text, origin, {kMaxRuleFileBytes, kMaxJsonNesting}));
  const JsonValue doc = json.root();
  SEMMAP_RETURN_IF_ERROR(CheckFormat(doc, origin));
  auto impl = std::make_unique<Impl>();
  ProgramBudget budget;
  SEMMAP_RETURN_IF_ERROR(CompileList(doc, "derived_node_names", &budget, &impl->derived_names));
  impl->derived_filter = std::make_unique<internal::PatternPrefilter>(impl->derived_names);
  SEMMAP_RETURN_IF_ERROR(CompileList(doc, "value_name_suffixes", &budget, &impl->value_suffixes));
  SEMMAP_RETURN_IF_ERROR(
      CompileList(doc, "derived_tensor_suffixes", &budget, &impl->derived_tensor_suffixes));
  SEMMAP_RETURN_IF_ERROR(ParseOpKinds(doc, &budget, &impl->op_kinds));
  SEMMAP_ASSIGN_OR_RETURN(impl->signature_checked_onnx,
                          CompileSingle(doc, "signature_checked_ops", "onnx", &budget));
  SEMMAP_ASSIGN_OR_RETURN(impl->signature_checked_torch,
                          CompileSingle(doc, "signature_checked_ops", "torch", &budget));
  SEMMAP_ASSIGN_OR_RETURN(impl->folded_torch,
                          CompileSingle(doc, "folded_ops", "torch", &budget));
  SEMMAP_RETURN_IF_ERROR(ParseCategories(doc, &budget, &impl->categories));
  SEMMAP_ASSIGN_OR_RETURN(impl->library_modules,
                          CompileSingle(doc, "library_modules", "qualified_class", &budget));
  SEMMAP_ASSIGN_OR_RETURN(impl->uncalled_modules,
                          CompileSingle(doc, "uncalled_modules", "qualified_class", &budget));
  SEMMAP_RETURN_IF_ERROR(CompileCapturingList(doc, origin, "order_keys", 1,
                                              "one capturing group (the counter)", &budget,
                                              &impl->order_keys));
  SEMMAP_RETURN_IF_ERROR(CompileCapturingList(
      doc, origin, "op_call_names", 2, "two capturing groups (the op, the call's number)",
      &budget, &impl->op_call_names));
  SEMMAP_RETURN_IF_ERROR(ParseOpCallAliases(doc, &budget, &impl->op_call_aliases));
  SEMMAP_RETURN_IF_ERROR(ParseCalibration(doc, &impl->calibration));
  SEMMAP_RETURN_IF_ERROR(ParseCalibrationByKind(doc, &impl->calibration_by_kind));
  SEMMAP_RETURN_IF_ERROR(ParseModuleOps(doc, &budget, &impl->module_ops));
  SEMMAP_RETURN_IF_ERROR(ParseForwardOps(doc, &budget, &impl->forward_ops));
  return Rules(std::move(impl));
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the rules");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the rules");
}

std::string Rules::categoryOf(const Manifest& manifest, ModuleId module) const {
  if (module == kNoModule) return std::string();
  const ModuleInfo& info = manifest.module(module);
  for (const auto& cat : impl_->categories) {
    bool ok = true;
    if (cat.class_re) ok = ok && RE2::PartialMatch(Piece(info.class_name), *cat.class_re);
    if (cat.qualified_re) ok = ok && RE2::PartialMatch(Piece(info.qualified_class), *cat.qualified_re);
    if (cat.path_re) ok = ok && RE2::PartialMatch(Piece(info.path), *cat.path_re);
    if (cat.repeated_child) {
      ok = ok && info.parent != kNoModule && manifest.module(info.parent).numbered_children;
    }
    if (ok) return cat.name;
  }
  return std::string();
}

std::vector<std::string> Rules::categoriesOf(const Manifest& manifest) const {
  const std::vector<internal::CategoryPatterns>& categories = impl_->categories;
  // Per distinct (class, qualified class): which categories' class
  // patterns hold (1) or not (0).
  absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, std::vector<char>>
      by_class;
  std::vector<std::string> out;
  out.reserve(manifest.size());
  for (std::size_t i = 0; i < manifest.size(); ++i) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(i));
    auto inserted = by_class.try_emplace(
        std::make_pair(absl::string_view(info.class_name), absl::string_view(info.qualified_class)));
    std::vector<char>& classes_hold = inserted.first->second;
    if (inserted.second) {
      classes_hold.reserve(categories.size());
      for (const internal::CategoryPatterns& cat : categories) {
        classes_hold.push_back(
            (!cat.class_re || RE2::PartialMatch(Piece(info.class_name), *cat.class_re)) &&
            (!cat.qualified_re || RE2::PartialMatch(Piece(info.qualified_class), *cat.qualified_re)));
      }
    }
    std::string category;
    for (std::size_t c = 0; c < categories.size(); ++c) {
      const internal::CategoryPatterns& cat = categories[c];
      if (!classes_hold[c]) continue;
      if (cat.path_re && !RE2::PartialMatch(Piece(info.path), *cat.path_re)) continue;
      if (cat.repeated_child &&
          (info.parent == kNoModule || !manifest.module(info.parent).numbered_children)) {
        continue;
      }
      category = cat.name;
      break;
    }
    out.push_back(std::move(category));
  }
  return out;
}

}  // namespace semmap
