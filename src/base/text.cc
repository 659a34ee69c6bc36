#include "base/text.h"

#include "absl/strings/str_cat.h"

namespace semmap {
namespace internal {

std::string Abbreviate(absl::string_view text, std::size_t max) {
  if (text.size() <= max) return std::string(text);
  return absl::StrCat(text.substr(0, max), "... (", text.size(), " bytes)");
}

}  // namespace internal
}  // namespace semmap
