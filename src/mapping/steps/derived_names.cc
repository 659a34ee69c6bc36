#include "mapping/steps/derived_names.h"

#include "absl/hash/hash.h"
#include "absl/numeric/int128.h"
#include "absl/strings/match.h"

namespace semmap {
namespace internal {
namespace {

// Tensors of modules up to this many are searched: hashing them costs more.
constexpr std::size_t kSearched = 16;
// The rolling hash is modulo this prime (2^61 - 1).
constexpr std::uint64_t kPrime = (std::uint64_t{1} << 61) - 1;

}  // namespace

DerivedNames::DerivedNames(const Manifest& manifest) : manifest_(manifest) {
  // A base of the process's own (absl's hash is seeded per process): a
  // file cannot be written to make its names collide.
  static const int kAnchor = 0;
  base_ = 257 + absl::Hash<const void*>{}(&kAnchor) % (kPrime - 512);
}

std::uint64_t DerivedNames::Step(std::uint64_t hash, char c) const {
  const absl::uint128 product =
      absl::uint128(hash) * base_ + static_cast<unsigned char>(c) + 1;
  std::uint64_t folded = absl::Uint128Low64(product & kPrime) + absl::Uint128Low64(product >> 61);
  folded = (folded & kPrime) + (folded >> 61);
  return folded >= kPrime ? folded - kPrime : folded;
}

const DerivedNames::Hashed& DerivedNames::HashedTensors(ModuleId module) {
  auto [it, fresh] = hashed_.try_emplace(module);
  if (!fresh) return it->second;
  const ModuleInfo info = manifest_.module(module);
  for (const auto* list : {&info.parameters, &info.buffers}) {
    for (const TensorSpec& spec : *list) {
      std::uint64_t hash = 0;
      for (const char c : spec.name) hash = Step(hash, c);
      it->second.names.insert(hash);
      if (spec.name.size() > it->second.longest) it->second.longest = spec.name.size();
    }
  }
  return it->second;
}

bool DerivedNames::DerivedFromOwnTensor(ModuleId module, absl::string_view name) {
  const absl::string_view local = name.substr(name.rfind('.') + 1);
  const ModuleInfo info = manifest_.module(module);
  if (info.parameters.size() + info.buffers.size() <= kSearched) {
    for (const auto* list : {&info.parameters, &info.buffers}) {
      for (const TensorSpec& spec : *list) {
        if (local.size() > spec.name.size() + 1 && absl::StartsWith(local, spec.name) &&
            local[spec.name.size()] == '_') {
          return true;
        }
      }
    }
    return false;
  }
  // A tensor name `s` with local = s + "_" + at least one more character:
  // at each underscore, the hash of what comes before it; a match of hashes
  // is confirmed by looking the name up.
  const Hashed& tensors = HashedTensors(module);
  std::uint64_t hash = 0;
  for (std::size_t i = 0; i + 1 < local.size() && i <= tensors.longest; ++i) {
    if (local[i] == '_' && tensors.names.contains(hash) &&
        manifest_.findTensor(module, local.substr(0, i)) != nullptr) {
      return true;
    }
    hash = Step(hash, local[i]);
  }
  return false;
}

}  // namespace internal
}  // namespace semmap
