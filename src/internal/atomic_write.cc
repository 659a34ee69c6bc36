#include "internal/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "internal/status_macros.h"

namespace semmap {
namespace internal {
namespace {

std::string DirectoryOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseNameOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::Status ErrnoError(const std::string& path, absl::string_view action, int err) {
  return absl::InternalError(absl::StrCat(path, ": ", action, ": ", std::strerror(err)));
}

}  // namespace

absl::Status CheckOutputPath(const std::string& output) {
  if (output.empty()) return absl::InvalidArgumentError("empty output path");
  const std::string dir = DirectoryOf(output);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(
        absl::StrCat(output, ": output directory ", dir, " does not exist"));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(output, ": output directory ", dir, " is not writable"));
  }
  if (::stat(output.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(output, ": is a directory, not a file"));
  }
  return absl::OkStatus();
}

absl::Status CheckNotSameFile(const std::string& output, const std::string& input,
                              absl::string_view what) {
  struct stat out_st, in_st;
  if (::stat(output.c_str(), &out_st) != 0 || ::stat(input.c_str(), &in_st) != 0) {
    return absl::OkStatus();  // a missing output cannot be the input
  }
  if (out_st.st_dev == in_st.st_dev && out_st.st_ino == in_st.st_ino) {
    return absl::InvalidArgumentError(absl::StrCat(
        output, ": is ", what, " ", input, "; refusing to overwrite it without allow_overwrite"));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputFor(const std::string& output,
                            std::initializer_list<ProtectedInput> inputs,
                            bool allow_overwrite) {
  SEMMAP_RETURN_IF_ERROR(CheckOutputPath(output));
  if (allow_overwrite) return absl::OkStatus();
  for (const ProtectedInput& input : inputs) {
    if (!input.path.empty()) SEMMAP_RETURN_IF_ERROR(CheckNotSameFile(output, input.path, input.what));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes) {
  const std::string dir = DirectoryOf(path);
  // O_EXCL with a fresh name instead of mkstemp: the file is created with
  // 0666 & ~umask, the mode a plain write would give it.
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    tmp = absl::StrCat(dir, "/.", BaseNameOf(path), ".tmp-", ::getpid(), "-", counter++, "-",
                       ticks % 1000000);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) {
      const int err = errno;
      if (err == ENOENT) {
        return absl::NotFoundError(
            absl::StrCat(path, ": output directory ", dir, " does not exist"));
      }
      if (err == EACCES || err == EROFS || err == EPERM) {
        return absl::PermissionDeniedError(absl::StrCat(
            path, ": cannot create a file in output directory ", dir, ": ", std::strerror(err)));
      }
      return ErrnoError(path, "cannot create a temporary file", err);
    }
  }
  if (fd < 0) return ErrnoError(path, "cannot create a temporary file", EEXIST);

  auto fail = [&](absl::string_view action) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return ErrnoError(path, action, err);
  };
  const char* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write failed");
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && ::fchmod(fd, existing.st_mode & 07777) != 0) {
    return fail("cannot copy the permissions of the existing file");
  }
  if (::fsync(fd) != 0) return fail("fsync failed");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoError(path, "close failed", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoError(path, "rename failed", err);
  }
  // Make the rename itself durable; failure here loses nothing already read.
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace semmap
