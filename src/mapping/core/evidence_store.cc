#include "mapping/core/evidence_store.h"

#include <algorithm>
#include <cstring>

namespace semmap {
namespace internal {

absl::string_view EvidenceStore::Intern(absl::string_view text) {
  if (text.empty()) return absl::string_view();
  // One probe: a text not found is stored where the probe ended.
  return *index_.lazy_emplace(text, [&](const auto& construct) { construct(Store(text)); });
}

absl::string_view EvidenceStore::Store(absl::string_view text) {
  char* at;
  if (text.size() > left_) {
    // A text longer than a block gets a block of its own.
    const std::size_t size = std::max(kBlockBytes, text.size());
    blocks_.push_back(std::make_unique<char[]>(size));
    at = blocks_.back().get();
    left_ = size == text.size() ? 0 : size - text.size();
  } else {
    at = blocks_.back().get() + (kBlockBytes - left_);
    left_ -= text.size();
  }
  std::memcpy(at, text.data(), text.size());
  return absl::string_view(at, text.size());
}

absl::string_view EvidenceStore::Keep(absl::string_view text) {
  if (text.empty()) return absl::string_view();
  blocks_.push_back(std::make_unique<char[]>(text.size()));
  std::memcpy(blocks_.back().get(), text.data(), text.size());
  left_ = 0;  // Intern starts a new block after this one
  return absl::string_view(blocks_.back().get(), text.size());
}

}  // namespace internal
}  // namespace semmap
