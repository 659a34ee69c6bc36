// Reading whole files with a size cap and errors that name the file.
#ifndef SEMMAP_SRC_IO_FILE_IO_H_
#define SEMMAP_SRC_IO_FILE_IO_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// Reads `path` into a string. NotFound when it does not exist,
// InvalidArgument when it is a directory or larger than `max_bytes`, the
// system's error otherwise (io/system_error.h). Messages start with the path. The
// string's buffer holds `padding` zero bytes after the text, for parsers
// that read past its end (io/json_reader.h).
absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     std::uint64_t max_bytes,
                                     std::size_t padding = 0);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_FILE_IO_H_
