// A read-only memory mapping of a whole file, for loaders that look at a
// small part of a large file (the ONNX wire scan skips tensor payloads, so
// their pages are never read).
//
// A file truncated by another process while mapped would raise SIGBUS on
// the first read past its new end. MappedFile guards its range: a
// process-wide SIGBUS handler (installed on first use, chaining to any
// previous one for faults elsewhere) maps a zero page over the faulting
// page and records the fault, so the reader sees zeros instead of dying
// and the loader turns truncated() into DataLoss; a file cut inside its
// last page faults nowhere and is told by its size. When all guard slots are
// taken (many mappings at once), Open reads the file into memory instead.
#ifndef SEMMAP_SRC_IO_MAPPED_FILE_H_
#define SEMMAP_SRC_IO_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

class MappedFile {
 public:
  // Maps `path` read-only. Errors as ReadFile (file_io.h): NotFound,
  // InvalidArgument for a directory or a file above `max_bytes`,
  // ResourceExhausted "out of memory" when no address space is left for
  // it, the system's error otherwise (io/system_error.h); messages start with
  // the path. An
  // empty file maps to an empty view.
  static absl::StatusOr<MappedFile> Open(const std::string& path,
                                         std::uint64_t max_bytes);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The file's bytes; valid while this object lives.
  absl::string_view bytes() const {
    if (data_ == nullptr) return copy_;
    return absl::string_view(static_cast<const char*>(data_), size_);
  }

  // Gives back the resident pages that lie wholly inside bytes [begin, end)
  // (madvise MADV_DONTNEED): a reader done with a part of a large file
  // keeps it from counting in the process's memory. The bytes stay
  // readable; reading them again maps them in again from the file. Does
  // nothing for a file read into memory.
  void Release(std::size_t begin, std::size_t end) const;

  // True when the file shrank while mapped: a read hit a page the file no
  // longer has (bytes() then holds zeros there), or the file is now shorter
  // than the mapping (cut inside its last page, or past every page read).
  // Either way bytes() is not the file's contents. Asks the file's size:
  // call it once a reader is done, not per read.
  bool truncated() const;

  // The mapped file's device and inode (both 0 when the file was read into
  // memory instead): writers that copy from the file itself check that
  // the path still names it.
  std::uint64_t device() const { return device_; }
  std::uint64_t inode() const { return inode_; }
  // Whether `path` names the mapped file now (same device and inode);
  // false for a file read into memory.
  bool IsFile(const std::string& path) const;

 private:
  MappedFile(void* data, std::size_t size, int slot, int fd)
      : data_(data), size_(size), slot_(slot), fd_(fd) {}
  explicit MappedFile(std::string copy) : copy_(std::move(copy)) {}
  void Unmap();

  void* data_ = nullptr;
  std::size_t size_ = 0;
  int slot_ = -1;      // guard slot of the mapping
  int fd_ = -1;        // the mapped file, open for its size (truncated())
  std::string copy_;   // the bytes, when no guard slot was free
  std::uint64_t device_ = 0;
  std::uint64_t inode_ = 0;
};

// OK, or DataLoss naming `path` (the file `file` maps) when the file shrank
// while it was read (MappedFile::truncated()): what was read held zeros, so
// nothing may be written from it.
absl::Status NotTruncated(const MappedFile& file, absl::string_view path);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_MAPPED_FILE_H_
