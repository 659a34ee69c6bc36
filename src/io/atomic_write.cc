#include "io/atomic_write.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "io/paths.h"
#include "io/system_error.h"

namespace semmap {
namespace internal {
namespace {

std::string BaseNameOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Temporary files are named ".<output name>.tmp-<pid>-<n>-<t>". The output
// name is cut so the whole name fits in NAME_MAX: any output name a plain
// write accepts can be written atomically too.
constexpr char kTempMarker[] = ".tmp-";
constexpr std::size_t kTempSuffixMax = 1 + sizeof(kTempMarker) + 3 * 20;

std::string TempPrefix(const std::string& output) {
  std::string base = BaseNameOf(output);
  const std::size_t room = NAME_MAX - kTempSuffixMax;
  if (base.size() > room) base.resize(room);
  return absl::StrCat(".", base, kTempMarker);
}

// One decimal field of a temporary file's name: 1 to `max_digits` digits,
// then `end` (or the end of `rest`); its value in *value.
bool TakeNumber(absl::string_view* rest, std::size_t max_digits, char end, long long* value) {
  std::size_t n = 0;
  *value = 0;
  while (n < rest->size() && (*rest)[n] >= '0' && (*rest)[n] <= '9') {
    *value = *value * 10 + ((*rest)[n] - '0');
    if (++n > max_digits) return false;
  }
  if (n == 0) return false;
  if (end == '\0') {
    if (n != rest->size()) return false;
  } else if (n == rest->size() || (*rest)[n] != end) {
    return false;
  }
  rest->remove_prefix(end == '\0' ? n : n + 1);
  return true;
}

// A temporary file left by a killed writer of the same output: semmap's
// name pattern, this user's, a writer pid that no longer exists on this
// machine, and no lock on it. Every writer holds an flock on its temporary
// file while it writes (the kernel drops it when the writer dies), which
// guards writers this process cannot see by pid: another pid namespace,
// another host sharing the file system where it carries flock.
// This is the name part: the file is then RemoveIfAbandoned's to judge.
bool IsStaleTemp(absl::string_view name, absl::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  // Exactly "<pid>-<n>-<t>" as the writer below names them: a pid, a
  // counter and a six-digit clock, nothing else.
  absl::string_view rest = name.substr(prefix.size());
  long long pid = 0, n = 0, t = 0;
  if (!TakeNumber(&rest, 10, '-', &pid) || !TakeNumber(&rest, 10, '-', &n) ||
      !TakeNumber(&rest, 6, '\0', &t)) {
    return false;
  }
  if (pid <= 0 || pid > std::numeric_limits<pid_t>::max() || pid == ::getpid()) return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Removes `dir`/`name`, a name IsStaleTemp accepts, when it is a regular
// file of this user's that no writer holds locked. The lock is taken
// before the unlink and held across it: a live writer keeps its file.
void RemoveIfAbandoned(const std::string& dir, absl::string_view name) {
  const std::string full = absl::StrCat(dir, "/", name);
  const int fd = ::open(full.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  // Only this user's own files: a writer of another user (or a file that
  // merely looks like a temporary) is not this process's to delete.
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    ::unlink(full.c_str());
  }
  ::close(fd);
}

// Removes the stale temporary files of `output`. Best effort: a file that
// cannot be removed is left for the next write.
void RemoveStaleTemps(const std::string& dir, const std::string& output) {
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), &::closedir);
  if (listing == nullptr) return;
  const std::string prefix = TempPrefix(output);
  while (const struct dirent* entry = ::readdir(listing.get())) {
    if (IsStaleTemp(entry->d_name, prefix)) RemoveIfAbandoned(dir, entry->d_name);
  }
}

// Writes all of `pieces` to `fd`, in order; false with errno set on
// failure. writev in batches: a piece may be gigabytes (a tensor payload),
// many may be a few bytes (re-encoded lengths).
bool WriteVector(int fd, absl::Span<const absl::string_view> pieces) {
  constexpr std::size_t kBatch = 512;  // below IOV_MAX everywhere
  std::size_t next = 0;        // first piece not completely written
  std::size_t written_in = 0;  // bytes of pieces[next] already written
  while (next < pieces.size()) {
    struct iovec iov[kBatch];
    int count = 0;
    for (std::size_t i = next; i < pieces.size() && count < static_cast<int>(kBatch); ++i) {
      const std::size_t skip = i == next ? written_in : 0;
      if (pieces[i].size() == skip) continue;
      iov[count].iov_base = const_cast<char*>(pieces[i].data() + skip);
      iov[count].iov_len = pieces[i].size() - skip;
      ++count;
    }
    if (count == 0) return true;  // only empty pieces left
    const ssize_t n = ::writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    std::size_t left = static_cast<std::size_t>(n);
    while (next < pieces.size()) {
      const std::size_t rest = pieces[next].size() - written_in;
      if (left < rest) {
        written_in += left;
        break;
      }
      left -= rest;
      ++next;
      written_in = 0;
    }
  }
  return true;
}

// The file large pieces may be copied from by the kernel.
struct OpenSource {
  absl::string_view mapping;
  int fd = -1;
  const std::string* path = nullptr;  // set when pieces come from a mapped file
};

// A write that failed. Reading a mapped page the file no longer has fails
// the write with EFAULT (the kernel, not this process, touched it): the
// source shrank while it was copied.
absl::Status WriteFailed(const std::string& path, int err, const OpenSource& source) {
  if (err == EFAULT && source.path != nullptr) {
    return absl::DataLossError(absl::StrCat(
        *source.path, ": the file shrank while it was copied (truncated by another process?); ",
        path, " not written"));
  }
  return OsError(path, "write failed", err);
}

// Pieces this large inside the source's mapping are copied from its file.
constexpr std::size_t kKernelCopyMin = std::size_t{1} << 20;

bool FromSource(const OpenSource& source, absl::string_view piece) {
  return source.fd >= 0 && piece.size() >= kKernelCopyMin &&
         piece.data() >= source.mapping.data() &&
         piece.data() + piece.size() <= source.mapping.data() + source.mapping.size();
}

// copy_file_range from the source file at the piece's offset; whatever the
// kernel does not copy (unsupported, or the file shrank) is written from
// the mapping, whose guard turns a vanished page into zeros and a
// truncated() that the caller checks before committing.
bool CopyFromSource(int fd, const OpenSource& source, absl::string_view piece) {
  loff_t offset = piece.data() - source.mapping.data();
  std::size_t done = 0;
  while (done < piece.size()) {
    const ssize_t n = ::copy_file_range(source.fd, &offset, fd, nullptr, piece.size() - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && done == 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
                               errno == EOPNOTSUPP || errno == EBADF || errno == EPERM)) {
      break;  // the kernel cannot copy between these two: read the mapping
    }
    if (n < 0) return false;
    if (n == 0) break;  // the file is shorter than the mapping: read the mapping
    done += static_cast<std::size_t>(n);
  }
  if (done == piece.size()) return true;
  const absl::string_view rest = piece.substr(done);
  return WriteVector(fd, absl::MakeConstSpan(&rest, 1));
}

// Writes all of `pieces` to `fd`, in order; false with errno set on failure.
bool WriteAll(int fd, absl::Span<const absl::string_view> pieces, const OpenSource& source) {
  std::size_t i = 0;
  while (i < pieces.size()) {
    if (FromSource(source, pieces[i])) {
      if (!CopyFromSource(fd, source, pieces[i])) return false;
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < pieces.size() && !FromSource(source, pieces[j])) ++j;
    if (!WriteVector(fd, pieces.subspan(i, j - i))) return false;
    i = j;
  }
  return true;
}

// FIFOs and character devices (/dev/null, a terminal, /dev/stdout on a
// pipe) are streamed into: there is nothing to replace atomically, and
// renaming over them would replace the device or the pipe itself.
absl::Status StreamInto(const std::string& path, absl::Span<const absl::string_view> bytes,
                        const std::function<absl::Status()>& before_commit,
                        const OpenSource& source) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return OsError(path, "cannot open for writing", errno);
  if (!WriteAll(fd, bytes, source)) {
    const int err = errno;
    ::close(fd);
    return WriteFailed(path, err, source);
  }
  if (::close(fd) != 0) return OsError(path, "close failed", errno);
  // A stream cannot be taken back: the check can only report.
  return before_commit ? before_commit() : absl::OkStatus();
}

// What an existing output is, after following symlinks.
enum class OutputKind { kMissing, kRegular, kStream, kOther };

OutputKind KindOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return OutputKind::kMissing;
  if (S_ISREG(st.st_mode)) return OutputKind::kRegular;
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return OutputKind::kStream;
  return OutputKind::kOther;
}

// The file a write to `path` must replace: a symlink's target, so that
// writing through a link (or /dev/stdout redirected to a file) updates the
// file and never replaces the link.
// A link that leads nowhere (dangling, or a loop) is refused: replacing
// it would replace the link, and creating its target would write where the
// user did not name.
absl::StatusOr<std::string> ResolveOutput(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  std::unique_ptr<char, void (*)(void*)> resolved(::realpath(path.c_str(), nullptr), &std::free);
  if (resolved != nullptr) return std::string(resolved.get());
  const int err = errno;
  // /dev/stdout on a pipe: /proc/self/fd/1 names no path, yet the link
  // opens (a stream).
  if (::stat(path.c_str(), &st) == 0) return path;
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": a symbolic link that leads nowhere (",
      err == ELOOP ? "a loop of links" : std::strerror(err),
      "); semmap writes through links and never replaces one"));
}

// The kernel's own file systems (/proc, /sys): their files are not
// replaced by renaming, and no file can be created in them.
bool OnKernelFileSystem(const std::string& dir) {
  constexpr long kProcMagic = 0x9fa0;
  constexpr long kSysfsMagic = 0x62656572;
  struct statfs fs;
  if (::statfs(dir.c_str(), &fs) != 0) return false;
  return static_cast<long>(fs.f_type) == kProcMagic || static_cast<long>(fs.f_type) == kSysfsMagic;
}

}  // namespace

absl::Status CheckOutputPath(const std::string& output) {
  if (output.empty()) return absl::InvalidArgumentError("empty output path");
  struct stat st;
  if (::stat(output.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(output, ": is a directory, not a file"));
  }
  // A FIFO or a character device is opened and written, never replaced:
  // its directory need not be writable (/dev/null, /dev/stdout, a FIFO in
  // a read-only directory), the stream itself must be.
  SEMMAP_ASSIGN_OR_RETURN(const std::string resolved, ResolveOutput(output));
  if (KindOf(resolved) == OutputKind::kStream) {
    if (::access(resolved.c_str(), W_OK) != 0) {
      const int err = errno;
      return WithSystemError(
          absl::PermissionDeniedError(absl::StrCat(output, ": not writable: ", std::strerror(err))),
          err);
    }
    return absl::OkStatus();
  }
  const std::string dir = DirectoryOf(output);
  if (::stat(dir.c_str(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat(output, ": output directory ", dir, " does not exist"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(output, ": ", dir, " is a file, not a directory"));
  }
  if (OnKernelFileSystem(DirectoryOf(resolved))) {
    return absl::InvalidArgumentError(absl::StrCat(
        output, ": ", DirectoryOf(resolved),
        " is a kernel file system (proc, sysfs): semmap writes a new file and renames it over "
        "the output, which cannot be done there"));
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(output, ": output directory ", dir, " is not writable"));
  }
  if (KindOf(resolved) == OutputKind::kOther) {
    return absl::InvalidArgumentError(absl::StrCat(
        output, ": not a regular file, FIFO or character device; refusing to replace it"));
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
        output, ": is ", what, " ", input, "; refusing to overwrite it without --allow-overwrite"));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputFor(const std::string& output,
                            std::initializer_list<ProtectedInput> inputs,
                            const std::vector<std::string>& other_inputs,
                            bool allow_overwrite) {
  SEMMAP_RETURN_IF_ERROR(CheckOutputPath(output));
  if (allow_overwrite) return absl::OkStatus();
  for (const ProtectedInput& input : inputs) {
    if (!input.path.empty()) SEMMAP_RETURN_IF_ERROR(CheckNotSameFile(output, input.path, input.what));
  }
  for (const std::string& input : other_inputs) {
    if (!input.empty()) SEMMAP_RETURN_IF_ERROR(CheckNotSameFile(output, input, "an input file"));
  }
  return absl::OkStatus();
}

absl::Status WriteMappedPiecesAtomically(const std::string& path,
                                         absl::Span<const absl::string_view> pieces,
                                         const MappedFile& file, const std::string& input) {
  const PieceSource from_file{file.bytes(), input, file.device(), file.inode()};
  return WritePiecesAtomically(
      path, pieces, [&file, &input] { return NotTruncated(file, input); }, &from_file);
}

absl::Status WriteFileAtomically(const std::string& requested, absl::string_view bytes) {
  return WritePiecesAtomically(requested, absl::MakeConstSpan(&bytes, 1));
}

// Long (about 120 lines) on purpose: the system calls of an atomic replace
// (create, write, chmod, fsync, close, rename, fsync the directory) in
// their order, each failure removing the temporary file; one function shows
// that every exit cleans up.
absl::Status WritePiecesAtomically(const std::string& requested,
                                   absl::Span<const absl::string_view> bytes,
                                   const std::function<absl::Status()>& before_commit,
                                   const PieceSource* piece_source) {
  OpenSource source;
  if (piece_source != nullptr) source.path = &piece_source->path;
  if (piece_source != nullptr && piece_source->inode != 0) {
    source.mapping = piece_source->mapping;
    source.fd = ::open(piece_source->path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (source.fd >= 0 &&
        (::fstat(source.fd, &st) != 0 || static_cast<std::uint64_t>(st.st_dev) != piece_source->device ||
         static_cast<std::uint64_t>(st.st_ino) != piece_source->inode)) {
      ::close(source.fd);  // no longer the mapped file: read the mapping
      source.fd = -1;
    }
  }
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{source.fd};
  SEMMAP_ASSIGN_OR_RETURN(const std::string path, ResolveOutput(requested));
  switch (KindOf(path)) {
    case OutputKind::kStream:
      return StreamInto(path, bytes, before_commit, source);
    case OutputKind::kOther:
      return absl::InvalidArgumentError(absl::StrCat(
          requested, ": not a regular file, FIFO or character device; refusing to replace it"));
    default:
      break;
  }
  const std::string dir = DirectoryOf(path);
  RemoveStaleTemps(dir, path);
  const std::string prefix = TempPrefix(path);
  // O_EXCL with a fresh name instead of mkstemp: the file is created with
  // 0666 & ~umask, the mode a plain write would give it.
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    tmp = absl::StrCat(dir, "/", prefix, ::getpid(), "-", counter++, "-", ticks % 1000000);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    // Held until the file is closed: the next writer of the output removes
    // it only once no one holds it (RemoveIfAbandoned).
    if (fd >= 0) ::flock(fd, LOCK_EX | LOCK_NB);
    if (fd < 0 && errno != EEXIST) {
      const int err = errno;
      struct stat dir_st;
      if (err == ENOENT && ::stat(dir.c_str(), &dir_st) != 0) {
        return absl::NotFoundError(
            absl::StrCat(path, ": output directory ", dir, " does not exist"));
      }
      if (err == EACCES || err == EROFS || err == EPERM) {
        return WithSystemError(
            absl::PermissionDeniedError(absl::StrCat(
                path, ": cannot create a file in output directory ", dir, ": ", std::strerror(err))),
            err);
      }
      return OsError(path, "cannot create a temporary file", err);
    }
  }
  if (fd < 0) return OsError(path, "cannot create a temporary file", EEXIST);

  auto fail = [&](absl::string_view action) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return OsError(path, action, err);
  };
  if (!WriteAll(fd, bytes, source)) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return WriteFailed(path, err, source);
  }
  // The replaced file keeps its owner and mode: root updating another
  // user's file must not leave it root's and unreadable to its owner. An
  // owner this process cannot give the new file is a refusal, not a
  // silent change.
  struct stat existing, fresh;
  if (::stat(path.c_str(), &existing) == 0 && ::fstat(fd, &fresh) == 0) {
    if ((existing.st_uid != fresh.st_uid || existing.st_gid != fresh.st_gid) &&
        ::fchown(fd, existing.st_uid, existing.st_gid) != 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return WithSystemError(
          absl::PermissionDeniedError(absl::StrCat(
              path, ": cannot keep the owner of the existing file (uid ", existing.st_uid,
              ", gid ", existing.st_gid, "): ", std::strerror(err), "; not replaced")),
          err);
    }
    if (::fchmod(fd, existing.st_mode & 07777) != 0) {
      return fail("cannot copy the permissions of the existing file");
    }
  }
  if (before_commit) {
    absl::Status verdict = before_commit();
    if (!verdict.ok()) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return verdict;
    }
  }
  if (::fsync(fd) != 0) return fail("fsync failed");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return OsError(path, "close failed", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return OsError(path, "rename failed", err);
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
