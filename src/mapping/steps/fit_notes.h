// The notes a fitting manifest carries (ManifestFit::notes): what the fit
// check (assess_fit.cc) counts per kind while it weighs the evidence.
#ifndef SEMMAP_SRC_MAPPING_STEPS_FIT_NOTES_H_
#define SEMMAP_SRC_MAPPING_STEPS_FIT_NOTES_H_

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "semmap/manifest_fit.h"

namespace semmap {
namespace internal {

// What the notes of a fitting manifest collect while the evidence is
// counted: per kind, how many names, their nodes and the first example in
// text order (so notes do not depend on the order of the scopes).
class NoteTally {
 public:
  void Add(FitNoteKind kind, absl::string_view example, std::size_t nodes) {
    Entry& e = entries_[static_cast<std::size_t>(kind)];
    ++e.count;
    e.nodes += nodes;
    if (e.example.empty() || example < e.example) e.example = std::string(example);
  }
  std::size_t count(FitNoteKind kind) const {
    return entries_[static_cast<std::size_t>(kind)].count;
  }
  // Adds the entries of `other`.
  void Merge(const NoteTally& other) {
    for (std::size_t i = 0; i < kFitNoteKindCount; ++i) {
      Entry& e = entries_[i];
      const Entry& o = other.entries_[i];
      e.count += o.count;
      e.nodes += o.nodes;
      if (!o.example.empty() && (e.example.empty() || o.example < e.example)) e.example = o.example;
    }
  }
  std::vector<FitNote> Notes() const;

 private:
  struct Entry {
    std::size_t count = 0;
    std::size_t nodes = 0;
    std::string example;
  };
  std::array<Entry, kFitNoteKindCount> entries_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_FIT_NOTES_H_
