// zlib streams (RFC 1950) in memory, for the provenance record a model
// carries in its metadata (docs/record.md). Inflation is bounded: a stream
// that would grow past the caller's limit stops there, so a small hostile
// input cannot make the reader allocate without end.
#ifndef SEMMAP_SRC_IO_DEFLATE_H_
#define SEMMAP_SRC_IO_DEFLATE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// `bytes` as one zlib stream at the best compression. ResourceExhausted
// when memory runs out; no other error.
absl::StatusOr<std::string> Deflate(absl::string_view bytes);

// The bytes of the zlib stream `stream`. Errors name `origin` first:
//   InvalidArgument  not a zlib stream, a corrupt one, bytes after its end,
//                    or more than `max_bytes` once inflated (the message
//                    gives the limit)
//   DataLoss         the stream ends early (truncated)
absl::StatusOr<std::string> Inflate(absl::string_view stream, std::size_t max_bytes,
                                    absl::string_view origin);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_DEFLATE_H_
