#include "manifest/pattern_prefilter.h"

#include <cstddef>

#include "absl/strings/ascii.h"

namespace semmap {
namespace internal {
namespace {

// Atoms shorter than this are not worth a search: a pattern whose every
// literal is shorter runs on every text.
constexpr int kMinAtomBytes = 3;

re2::StringPiece Piece(absl::string_view s) { return re2::StringPiece(s.data(), s.size()); }

}  // namespace

PatternPrefilter::PatternPrefilter(const std::vector<std::unique_ptr<RE2>>& patterns)
    : patterns_(patterns) {
  if (patterns.empty()) return;
  auto filter = std::make_unique<re2::FilteredRE2>(kMinAtomBytes);
  for (const auto& re : patterns) {
    int id = 0;
    if (filter->Add(Piece(re->pattern()), re->options(), &id) != RE2::NoError) return;
  }
  filter->Compile(&atoms_);
  // FilteredRE2 lowers atoms with Unicode case folding; texts are lowered
  // here in ASCII only. An atom beyond ASCII could then be missed in a text
  // that holds it in upper case: such patterns run on every text.
  for (const std::string& atom : atoms_) {
    for (char c : atom) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        atoms_.clear();
        return;
      }
    }
  }
  // The patterns that pass with no atom found are those without atoms.
  std::vector<int> passing;
  filter->AllPotentials({}, &passing);
  unfiltered_ = !passing.empty();
  filter_ = std::move(filter);
}

bool PatternPrefilter::AnyPartialMatch(absl::string_view text) const {
  if (filter_ == nullptr) {
    for (const auto& re : patterns_) {
      if (RE2::PartialMatch(Piece(text), *re)) return true;
    }
    return false;
  }
  // Atoms are lower case: they are searched for in the lowered text.
  char buffer[256];
  std::string heap;
  char* lower = buffer;
  if (text.size() > sizeof(buffer)) {
    heap.resize(text.size());
    lower = &heap[0];
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    lower[i] = absl::ascii_tolower(static_cast<unsigned char>(text[i]));
  }
  const absl::string_view lowered(lower, text.size());
  std::vector<int> found;
  for (std::size_t a = 0; a < atoms_.size(); ++a) {
    if (lowered.find(atoms_[a]) != absl::string_view::npos) found.push_back(static_cast<int>(a));
  }
  if (found.empty() && !unfiltered_) return false;
  return filter_->FirstMatch(Piece(text), found) >= 0;
}

}  // namespace internal
}  // namespace semmap
