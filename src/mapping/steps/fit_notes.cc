#include "mapping/steps/fit_notes.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/text.h"

namespace semmap {
namespace internal {
namespace {

// How a note reads, by FitNoteKind: "<count><one or many><why>".
struct NoteWording {
  const char* one;
  const char* many;
  const char* why;
};
constexpr NoteWording kNoteWording[kFitNoteKindCount] = {
    {" scope is a later call", " scopes are later calls",
     " of a module called more than once in forward"},
    {" item has", " items have", " parameters and no node: folded into a neighbour by the exporter"},
    {" parameter is", " parameters are", " stored in another shape of the same size"},
    {" initializer is", " initializers are",
     " named under a module but none of its parameters: created in forward"},
    {" name lies", " names lie",
     " outside the manifest's paths: reached past a module whose forward did not run, or outside "
     "the module bound to the root"},
};

}  // namespace

std::vector<FitNote> NoteTally::Notes() const {
  std::vector<FitNote> notes;
  for (std::size_t i = 0; i < kFitNoteKindCount; ++i) {
    const Entry& e = entries_[i];
    if (e.count == 0) continue;
    FitNote note;
    note.kind = static_cast<FitNoteKind>(i);
    note.count = e.count;
    note.nodes = e.nodes;
    note.example = Abbreviate(e.example, 80);
    const NoteWording& w = kNoteWording[i];
    note.text = absl::StrCat(e.count, e.count == 1 ? w.one : w.many, w.why, " (e.g. \"",
                             note.example, "\")");
    notes.push_back(std::move(note));
  }
  return notes;
}

}  // namespace internal
}  // namespace semmap
