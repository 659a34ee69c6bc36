// zlib streams (RFC 1950) in memory, for the provenance record a model
// carries in its metadata (docs/record.md). Inflation is bounded: a stream
// that would grow past the caller's limit stops there, so a small hostile
// input cannot make the reader allocate without end.
#ifndef SEMMAP_SRC_IO_DEFLATE_H_
#define SEMMAP_SRC_IO_DEFLATE_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace semmap {
namespace internal {

// `bytes` as one zlib stream at zlib's default level (6: within a few per
// cent of the best size, several times faster to write). ResourceExhausted
// when memory runs out; no other error.
absl::StatusOr<std::string> Deflate(absl::string_view bytes);
// The concatenation of `pieces` as one zlib stream, without joining them.
// A stream above 8 MB is deflated in pieces of 8 MB on several cores, each
// with the 32 KB before it as its dictionary (as pigz does): the stream
// written depends on the bytes alone, not on the machine, and is within a
// fraction of a per cent of the single call's size.
absl::StatusOr<std::string> Deflate(absl::Span<const absl::string_view> pieces);

// The bytes of the zlib stream `stream`. Errors name `origin` first:
//   InvalidArgument  not a zlib stream, a corrupt one, bytes after its end,
//                    or more than `max_bytes` once inflated (the message
//                    gives the limit)
//   DataLoss         the stream ends early (truncated)
absl::StatusOr<std::string> Inflate(absl::string_view stream, std::size_t max_bytes,
                                    absl::string_view origin);

// The beginning of the zlib stream's bytes: inflates piece by piece until
// `enough` (called on what is inflated so far, after each piece) says so,
// or the stream ends. The errors of Inflate, but bytes after the stream's
// end are not looked for unless it was inflated to its end.
absl::StatusOr<std::string> InflatePrefix(
    absl::string_view stream, std::size_t max_bytes, absl::string_view origin,
    const std::function<bool(absl::string_view inflated)>& enough);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_DEFLATE_H_
