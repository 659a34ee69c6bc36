// Names an exporter made from one of a module's own tensors ("weight_bias"
// after folding a BatchNorm into a Conv with a "weight"), for the fit check
// (assess_fit.cc): found in time linear in the name, however many tensors
// the module holds.
#ifndef SEMMAP_SRC_MAPPING_STEPS_DERIVED_NAMES_H_
#define SEMMAP_SRC_MAPPING_STEPS_DERIVED_NAMES_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "semmap/manifest.h"

namespace semmap {
namespace internal {

// Reads `manifest`, which must outlive it. Not thread-safe (its tables of
// large modules are built on first use).
class DerivedNames {
 public:
  explicit DerivedNames(const Manifest& manifest);

  // Whether the local name of `name` (after its last dot) is one of
  // `module`'s own tensors' names, an underscore and more: "weight_bias" of
  // a module with a "weight".
  bool DerivedFromOwnTensor(ModuleId module, absl::string_view name);

 private:
  // A module of many tensors: a rolling hash of each tensor name, so that
  // every prefix of a name ending at an underscore is looked up in one pass
  // over the name (searching the tensors cost their number per name, a
  // module of 100,000 tensors and as many such names 10^10 comparisons).
  struct Hashed {
    absl::flat_hash_set<std::uint64_t> names;
    std::size_t longest = 0;
  };
  const Hashed& HashedTensors(ModuleId module);
  std::uint64_t Step(std::uint64_t hash, char c) const;

  const Manifest& manifest_;
  std::uint64_t base_;  // of the rolling hash, per process
  absl::flat_hash_map<ModuleId, Hashed> hashed_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_DERIVED_NAMES_H_
