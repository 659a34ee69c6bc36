#include "io/paths.h"

#include <filesystem>
#include <system_error>

namespace semmap {
namespace internal {

std::string DirectoryOf(absl::string_view path) {
  const std::size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string ResolvedDirectoryOf(absl::string_view path) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::absolute(DirectoryOf(path), ec);
  if (ec) return DirectoryOf(path);
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(dir, ec);
  if (ec) return dir.string();
  // weakly_canonical ends a tail that does not exist with "/" when it held
  // ".." ("a/missing/.." -> "a/"): one directory, one spelling.
  std::string text = resolved.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

}  // namespace internal
}  // namespace semmap
