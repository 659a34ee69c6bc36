// The text of rules/default.json, compiled in (see cmake/default_rules.cc.in).
#ifndef SEMMAP_SRC_MANIFEST_DEFAULT_RULES_H_
#define SEMMAP_SRC_MANIFEST_DEFAULT_RULES_H_

namespace semmap {
namespace internal {

extern const char kDefaultRulesJson[];

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MANIFEST_DEFAULT_RULES_H_
