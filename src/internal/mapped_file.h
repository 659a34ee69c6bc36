// A read-only memory mapping of a whole file, for loaders that look at a
// small part of a large file (the ONNX wire scan skips tensor payloads, so
// their pages are never read).
#ifndef SEMMAP_SRC_INTERNAL_MAPPED_FILE_H_
#define SEMMAP_SRC_INTERNAL_MAPPED_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

class MappedFile {
 public:
  // Maps `path` read-only. Errors as ReadFile (file_io.h): NotFound,
  // InvalidArgument for a directory or a file above `max_bytes`, Internal
  // for other I/O failures; messages start with the path. An empty file
  // maps to an empty view.
  static absl::StatusOr<MappedFile> Open(const std::string& path,
                                         std::uint64_t max_bytes);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The file's bytes; valid while this object lives.
  absl::string_view bytes() const {
    return absl::string_view(static_cast<const char*>(data_), size_);
  }

 private:
  MappedFile(void* data, std::size_t size) : data_(data), size_(size) {}
  void Unmap();

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_INTERNAL_MAPPED_FILE_H_
