#include "base/text.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace semmap {
namespace internal {

std::string Abbreviate(absl::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  return absl::StrCat(text.substr(0, max), "... (", text.size(), " bytes)");
}

absl::string_view FindEmbeddedName(absl::string_view name,
                                   absl::FunctionRef<bool(absl::string_view)> candidate,
                                   absl::FunctionRef<bool(absl::string_view)> known) {
  const auto starts_after = [](char c) { return c == '_' || c == '/' || c == ':'; };
  const auto ends_before = [](char c) { return c == '_' || c == ':' || c == '/'; };
  // Ends, longest first: the end of the name, then before each separator
  // from the right (a run of separators counts once).
  // (On the stack: every value name of a graph is asked.)
  std::array<std::size_t, kMaxEmbeddedEnds> ends;
  std::size_t end_count = 0;
  ends[end_count++] = name.size();
  for (std::size_t i = name.size(); i-- > 1 && end_count < ends.size();) {
    if (ends_before(name[i]) && !ends_before(name[i - 1])) ends[end_count++] = i;
  }
  int starts = 0;
  for (std::size_t start = 0; start < name.size() && starts < kMaxEmbeddedStarts; ++start) {
    if (start > 0 && !(starts_after(name[start - 1]) && !starts_after(name[start]))) continue;
    ++starts;
    for (std::size_t e = 0; e < end_count; ++e) {
      const std::size_t end = ends[e];
      if (end <= start) break;
      if (start == 0 && end == name.size()) continue;  // the name itself
      const absl::string_view part = name.substr(start, end - start);
      if (candidate(part) && known(part)) return part;
    }
  }
  return {};
}

bool ParameterLikeName(absl::string_view name) {
  if (name.empty() || name.find('.') == absl::string_view::npos) return false;
  if (absl::ascii_isdigit(static_cast<unsigned char>(name.front()))) return false;
  char previous = '.';
  for (char c : name) {
    const bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    if (!ok || (c == '.' && previous == '.')) return false;
    previous = c;
  }
  return previous != '.';
}

}  // namespace internal
}  // namespace semmap
