// Rules: the user-extendable data behind semmap's inference.
//
// Everything semmap knows beyond the graph and the manifest lives in a rule
// file (JSON with RE2 patterns), never in code: which node names are built
// from value names, which suffixes optimizers append to value names, which
// ops carry weights or belong with their consumers, and how module classes
// map to semantic categories (attention, projection, normalization, ...).
// rules/default.json is compiled in; Rules::Load reads a user's file in the
// same format (docs/rules.md).
//
//   absl::StatusOr<semmap::Rules> rules = semmap::Rules::Load("my_rules.json");
//   semmap::MapperOptions options;
//   options.rules = &*rules;
//
// Immutable after loading; safe to share between threads.
#ifndef SEMMAP_INCLUDE_SEMMAP_RULES_H_
#define SEMMAP_INCLUDE_SEMMAP_RULES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {
class RuleQueries;
}  // namespace internal

class SEMMAP_EXPORT Rules {
 public:
  // The compiled-in default rules (rules/default.json).
  static const Rules& Default();
  // Reads a rule file. Errors name the file and the JSON pointer:
  // NotFound, InvalidArgument (bad JSON, wrong field types, an RE2 pattern
  // that does not compile or exceeds the program-size budget),
  // FailedPrecondition (unknown format version).
  static absl::StatusOr<Rules> Load(const std::string& path);
  static absl::StatusOr<Rules> Parse(absl::string_view json, absl::string_view origin);

  Rules(Rules&&) noexcept;
  Rules& operator=(Rules&&) noexcept;
  ~Rules();

  // The semantic category of a manifest module ("" when no rule matches).
  std::string categoryOf(const Manifest& manifest, ModuleId module) const;
  // categoryOf() of every module of `manifest`, by module id; the class
  // patterns run once per distinct pair of classes, not per module.
  std::vector<std::string> categoriesOf(const Manifest& manifest) const;

 private:
  friend class internal::RuleQueries;
  struct Impl;
  explicit Rules(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_RULES_H_
