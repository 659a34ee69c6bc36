#include "semmap/rules.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "internal/default_rules.h"
#include "internal/file_io.h"
#include "internal/json_nesting.h"
#include "internal/out_of_memory.h"
#include "internal/status_macros.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

namespace semmap {
namespace {

using nlohmann::json;

constexpr int kRulesVersion = 1;
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

struct Rules::Impl {
  struct Category {
    std::string name;
    std::unique_ptr<RE2> class_re, qualified_re, path_re;
    bool repeated_child = false;
  };
  std::vector<std::unique_ptr<RE2>> derived_names;
  std::vector<std::unique_ptr<RE2>> value_suffixes;
  std::unique_ptr<RE2> passthrough_ops;
  std::unique_ptr<RE2> follow_consumers_ops;
  std::unique_ptr<RE2> shape_source_ops;
  std::vector<Category> categories;
  std::unique_ptr<RE2> library_modules;
  std::unique_ptr<RE2> uncalled_modules;
  struct ModuleOps {
    std::unique_ptr<RE2> class_re, qualified_re, ops_re;
  };
  std::vector<ModuleOps> module_ops;
  std::vector<std::unique_ptr<RE2>> order_keys;
};

namespace {

absl::Status TotalBudgetExceeded(absl::string_view origin, absl::string_view pointer) {
  return absl::InvalidArgumentError(absl::StrCat(
      origin, ": ", pointer, ": the file's patterns together are above the compiled size limit (",
      kMaxTotalProgramMemory, " bytes of RE2 program memory)"));
}

absl::StatusOr<std::unique_ptr<RE2>> Compile(const json& value, const std::string& pointer,
                                             absl::string_view origin, ProgramBudget* budget) {
  if (!value.is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", pointer, ": expected a pattern string"));
  }
  const std::string pattern = value.get<std::string>();
  if (pattern.empty() || pattern.size() > kMaxPatternBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": ", pointer, ": pattern must be 1 to ", kMaxPatternBytes, " bytes"));
  }
  if (++budget->patterns > kMaxPatterns) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": ", pointer, ": more than ", kMaxPatterns, " patterns in one file"));
  }
  const std::int64_t left = kMaxTotalProgramMemory - budget->used;
  if (left <= 0) return TotalBudgetExceeded(origin, pointer);
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(std::min(kMaxProgramMemory, left));
  auto re = std::make_unique<RE2>(pattern, options);
  if (!re->ok() && left < kMaxProgramMemory && re->error_code() == RE2::ErrorPatternTooLarge) {
    return TotalBudgetExceeded(origin, pointer);
  }
  if (re->ok()) budget->used += kBytesPerInstruction * re->ProgramSize();
  if (!re->ok()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", pointer, ": invalid pattern \"",
                                                   internal::Abbreviate(pattern, 80), "\": ",
                                                   internal::Abbreviate(re->error(), 200)));
  }
  return re;
}

absl::Status CompileList(const json& doc, const char* key, absl::string_view origin,
                         ProgramBudget* budget, std::vector<std::unique_ptr<RE2>>* out) {
  auto it = doc.find(key);
  if (it == doc.end()) return absl::OkStatus();
  const std::string where = absl::StrCat("/", key);
  if (!it->is_array()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", where, ": expected an array"));
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& entry = (*it)[i];
    const std::string p = absl::StrCat(where, "/", i);
    if (!entry.is_object() || !entry.contains("pattern")) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ": ", p, ": expected {\"pattern\": ...}"));
    }
    SEMMAP_ASSIGN_OR_RETURN(auto re, Compile(entry["pattern"], p + "/pattern", origin, budget));
    out->push_back(std::move(re));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RE2>> CompileSingle(const json& doc, const char* key,
                                                   absl::string_view origin,
                                                   ProgramBudget* budget) {
  auto it = doc.find(key);
  if (it == doc.end()) return std::unique_ptr<RE2>();
  const std::string where = absl::StrCat("/", key);
  if (!it->is_object() || !it->contains("pattern")) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", where, ": expected {\"pattern\": ...}"));
  }
  return Compile((*it)["pattern"], where + "/pattern", origin, budget);
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

absl::StatusOr<Rules> Rules::Load(const std::string& path) {
  SEMMAP_ASSIGN_OR_RETURN(std::string text, internal::ReadFile(path, kMaxRuleFileBytes));
  return Parse(text, path);
}

absl::StatusOr<Rules> Rules::Parse(absl::string_view text, absl::string_view origin) try {
  SEMMAP_RETURN_IF_ERROR(internal::CheckJsonNesting(text, 64, origin));
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not valid JSON: ",
                                                   internal::Abbreviate(e.what(), 200)));
  }
  // Type checks before value()/get(): nlohmann throws on a type mismatch.
  if (!doc.is_object() || !doc.contains("format") || !doc["format"].is_string() ||
      doc["format"].get<std::string>() != "semmap.rules") {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": /format: not a semmap rule file (expected \"format\": \"semmap.rules\")"));
  }
  if (!doc.contains("version") || !doc["version"].is_number_integer() ||
      doc["version"].get<std::int64_t>() != kRulesVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(origin, ": /version: this build reads rule files of version ", kRulesVersion));
  }
  auto impl = std::make_unique<Impl>();
  ProgramBudget budget;
  SEMMAP_RETURN_IF_ERROR(CompileList(doc, "derived_node_names", origin, &budget, &impl->derived_names));
  SEMMAP_RETURN_IF_ERROR(CompileList(doc, "value_name_suffixes", origin, &budget, &impl->value_suffixes));
  SEMMAP_ASSIGN_OR_RETURN(impl->passthrough_ops, CompileSingle(doc, "weight_passthrough_ops", origin, &budget));
  SEMMAP_ASSIGN_OR_RETURN(impl->follow_consumers_ops, CompileSingle(doc, "follow_consumers_ops", origin, &budget));
  SEMMAP_ASSIGN_OR_RETURN(impl->shape_source_ops, CompileSingle(doc, "shape_source_ops", origin, &budget));
  if (auto it = doc.find("categories"); it != doc.end()) {
    if (!it->is_array()) return absl::InvalidArgumentError(absl::StrCat(origin, ": /categories: expected an array"));
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& c = (*it)[i];
      const std::string p = absl::StrCat("/categories/", i);
      if (!c.is_object() || !c.contains("category") || !c["category"].is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(origin, ": ", p, ": expected {\"category\": \"...\", ...}"));
      }
      Impl::Category cat;
      cat.name = c["category"].get<std::string>();
      if (c.contains("class")) {
        SEMMAP_ASSIGN_OR_RETURN(cat.class_re, Compile(c["class"], p + "/class", origin, &budget));
      }
      if (c.contains("qualified_class")) {
        SEMMAP_ASSIGN_OR_RETURN(cat.qualified_re, Compile(c["qualified_class"], p + "/qualified_class", origin, &budget));
      }
      if (c.contains("path")) {
        SEMMAP_ASSIGN_OR_RETURN(cat.path_re, Compile(c["path"], p + "/path", origin, &budget));
      }
      if (c.contains("repeated_child")) {
        if (!c["repeated_child"].is_boolean()) {
          return absl::InvalidArgumentError(
              absl::StrCat(origin, ": ", p, "/repeated_child: expected true or false"));
        }
        cat.repeated_child = c["repeated_child"].get<bool>();
      }
      if (!cat.class_re && !cat.qualified_re && !cat.path_re && !cat.repeated_child) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ": ", p, ": a category needs class, qualified_class, path or repeated_child"));
      }
      impl->categories.push_back(std::move(cat));
    }
  }
  if (auto it = doc.find("library_modules"); it != doc.end()) {
    if (!it->is_object() || !it->contains("qualified_class")) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": /library_modules: expected {\"qualified_class\": ...}"));
    }
    SEMMAP_ASSIGN_OR_RETURN(impl->library_modules,
                            Compile((*it)["qualified_class"], "/library_modules/qualified_class", origin, &budget));
  }
  if (auto it = doc.find("uncalled_modules"); it != doc.end()) {
    if (!it->is_object() || !it->contains("qualified_class")) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": /uncalled_modules: expected {\"qualified_class\": ...}"));
    }
    SEMMAP_ASSIGN_OR_RETURN(
        impl->uncalled_modules,
        Compile((*it)["qualified_class"], "/uncalled_modules/qualified_class", origin, &budget));
  }
  SEMMAP_RETURN_IF_ERROR(CompileList(doc, "order_keys", origin, &budget, &impl->order_keys));
  for (std::size_t i = 0; i < impl->order_keys.size(); ++i) {
    if (impl->order_keys[i]->NumberOfCapturingGroups() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": /order_keys/", i, "/pattern: needs exactly one capturing group (the counter)"));
    }
  }
  if (auto it = doc.find("module_ops"); it != doc.end()) {
    if (!it->is_array()) return absl::InvalidArgumentError(absl::StrCat(origin, ": /module_ops: expected an array"));
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& r = (*it)[i];
      const std::string p = absl::StrCat("/module_ops/", i);
      if (!r.is_object() || !r.contains("ops") || (!r.contains("class") && !r.contains("qualified_class"))) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ": ", p, ": expected {\"class\" or \"qualified_class\": ..., \"ops\": ...}"));
      }
      Impl::ModuleOps rule;
      if (r.contains("class")) {
        SEMMAP_ASSIGN_OR_RETURN(rule.class_re, Compile(r["class"], p + "/class", origin, &budget));
      }
      if (r.contains("qualified_class")) {
        SEMMAP_ASSIGN_OR_RETURN(rule.qualified_re, Compile(r["qualified_class"], p + "/qualified_class", origin, &budget));
      }
      SEMMAP_ASSIGN_OR_RETURN(rule.ops_re, Compile(r["ops"], p + "/ops", origin, &budget));
      impl->module_ops.push_back(std::move(rule));
    }
  }
  return Rules(std::move(impl));
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the rules");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the rules");
}

bool Rules::isDerivedNodeName(absl::string_view name) const {
  for (const auto& re : impl_->derived_names) {
    if (RE2::PartialMatch(Piece(name), *re)) return true;
  }
  return false;
}

absl::string_view Rules::stripValueSuffixes(absl::string_view value) const {
  // Suffixes stack ("_output_0_quantized"): strip until none applies.
  for (int round = 0; round < 8; ++round) {
    bool stripped = false;
    for (const auto& re : impl_->value_suffixes) {
      re2::StringPiece match;
      if (re->Match(Piece(value), 0, value.size(), RE2::UNANCHORED, &match, 1) &&
          match.data() + match.size() == value.data() + value.size() && !match.empty()) {
        value.remove_suffix(match.size());
        stripped = true;
      }
    }
    if (!stripped) break;
  }
  return value;
}

bool Rules::isWeightPassthrough(absl::string_view op_type) const {
  return impl_->passthrough_ops && RE2::PartialMatch(Piece(op_type), *impl_->passthrough_ops);
}

bool Rules::followsConsumers(absl::string_view op_type) const {
  return impl_->follow_consumers_ops &&
         RE2::PartialMatch(Piece(op_type), *impl_->follow_consumers_ops);
}

bool Rules::isShapeSource(absl::string_view op_type) const {
  return impl_->shape_source_ops && RE2::PartialMatch(Piece(op_type), *impl_->shape_source_ops);
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

bool Rules::orderKey(absl::string_view name, std::uint64_t* key) const {
  for (const auto& re : impl_->order_keys) {
    re2::StringPiece digits;
    if (RE2::FullMatch(Piece(name), *re, &digits) && !digits.empty() && digits.size() <= 18) {
      std::uint64_t v = 0;
      for (char c : digits) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
      }
      *key = v;
      return true;
    }
  }
  return false;
}

bool Rules::isUncalledModule(const ModuleInfo& module) const {
  return impl_->uncalled_modules && !module.qualified_class.empty() &&
         RE2::PartialMatch(Piece(module.qualified_class), *impl_->uncalled_modules);
}

bool Rules::isLibraryModule(const ModuleInfo& module) const {
  return impl_->library_modules && !module.qualified_class.empty() &&
         RE2::PartialMatch(Piece(module.qualified_class), *impl_->library_modules);
}

int Rules::moduleOpsRule(const ModuleInfo& module) const {
  for (std::size_t i = 0; i < impl_->module_ops.size(); ++i) {
    const Impl::ModuleOps& r = impl_->module_ops[i];
    if (r.class_re && RE2::PartialMatch(Piece(module.class_name), *r.class_re)) return static_cast<int>(i);
    if (r.qualified_re && RE2::PartialMatch(Piece(module.qualified_class), *r.qualified_re)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool Rules::moduleProduces(int rule, absl::string_view op_type) const {
  return rule >= 0 && static_cast<std::size_t>(rule) < impl_->module_ops.size() &&
         RE2::PartialMatch(Piece(op_type), *impl_->module_ops[rule].ops_re);
}

}  // namespace semmap
