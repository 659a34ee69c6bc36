#include "io/file_io.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "io/system_error.h"

namespace semmap {
namespace internal {

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     std::uint64_t max_bytes,
                                     std::size_t padding) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return WithSystemError(absl::NotFoundError(absl::StrCat(path, ": no such file")), err);
    }
    return OsError(path, "", err);
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is a directory, not a file"));
  }
  // A FIFO with no writer would block the read forever.
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file (a FIFO, socket or device)"));
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": file is ", st.st_size,
                     " bytes, above the limit of ", max_bytes, " bytes"));
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(
      std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) return OsError(path, "cannot open", errno);
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  std::string data;
  // Zero-filled, then shrunk: the padding stays allocated and initialised.
  data.resize(size + padding);
  const std::size_t got = size == 0 ? 0 : std::fread(&data[0], 1, size, file.get());
  if (got != size) {
    return absl::DataLossError(absl::StrCat(path, ": read ", got, " of ",
                                            size, " bytes"));
  }
  data.resize(size);
  return data;
}

}  // namespace internal
}  // namespace semmap
