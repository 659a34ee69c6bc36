#include "io/deflate.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace semmap {
namespace internal {
namespace {

// zlib counts in uInt: feed and drain it in pieces below that.
constexpr std::size_t kChunk = std::size_t{1} << 20;

// A z_stream ended on every way out of the function that set it up.
struct Deflating {
  z_stream z{};
  ~Deflating() { deflateEnd(&z); }
};
struct Inflating {
  z_stream z{};
  ~Inflating() { inflateEnd(&z); }
};

}  // namespace

absl::StatusOr<std::string> Deflate(absl::string_view bytes) {
  Deflating stream;
  z_stream& z = stream.z;
  if (deflateInit(&z, Z_DEFAULT_COMPRESSION) != Z_OK) {
    return absl::ResourceExhaustedError("out of memory starting a zlib stream");
  }
  std::string out;
  int rc = Z_OK;
  try {
    out.reserve(bytes.size() / 4 + 64);
    std::size_t in_at = 0;
    while (rc != Z_STREAM_END && rc != Z_STREAM_ERROR) {
      const std::size_t in_now = std::min(kChunk, bytes.size() - in_at);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_at));
      z.avail_in = static_cast<uInt>(in_now);
      const int flush = in_at + in_now == bytes.size() ? Z_FINISH : Z_NO_FLUSH;
      do {
        const std::size_t before = out.size();
        out.resize(before + kChunk);
        z.next_out = reinterpret_cast<Bytef*>(&out[before]);
        z.avail_out = static_cast<uInt>(kChunk);
        rc = deflate(&z, flush);
        out.resize(before + kChunk - z.avail_out);
      } while (z.avail_out == 0 && rc != Z_STREAM_END);
      in_at += in_now - z.avail_in;
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of memory compressing the record");
  }
  if (rc != Z_STREAM_END) return absl::InternalError("zlib could not compress the record");
  return out;
}

absl::StatusOr<std::string> Inflate(absl::string_view stream, std::size_t max_bytes,
                                    absl::string_view origin) {
  return InflatePrefix(stream, max_bytes, origin, nullptr);
}

absl::StatusOr<std::string> InflatePrefix(
    absl::string_view stream, std::size_t max_bytes, absl::string_view origin,
    const std::function<bool(absl::string_view inflated)>& enough) {
  Inflating inflating;
  z_stream& z = inflating.z;
  if (inflateInit(&z) != Z_OK) {
    return absl::ResourceExhaustedError(absl::StrCat(origin, ": out of memory starting zlib"));
  }
  std::string out;
  int rc = Z_OK;
  std::size_t in_at = 0;
  try {
    while (rc != Z_STREAM_END) {
      if (z.avail_in == 0) {
        const std::size_t in_now = std::min(kChunk, stream.size() - in_at);
        if (in_now == 0) break;  // the input ends before the stream does
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stream.data() + in_at));
        z.avail_in = static_cast<uInt>(in_now);
        in_at += in_now;
      }
      if (out.size() >= max_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ": inflates to more than ", max_bytes, " bytes, the limit"));
      }
      const std::size_t room = std::min(kChunk, max_bytes - out.size());
      const std::size_t before = out.size();
      out.resize(before + room);
      z.next_out = reinterpret_cast<Bytef*>(&out[before]);
      z.avail_out = static_cast<uInt>(room);
      rc = inflate(&z, Z_NO_FLUSH);
      out.resize(before + room - z.avail_out);
      if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR || rc == Z_STREAM_ERROR) {
        const std::string why = z.msg != nullptr ? z.msg : "corrupt data";
        return absl::InvalidArgumentError(
            absl::StrCat(origin, ": not a valid zlib stream (", why, ")"));
      }
      if (rc == Z_MEM_ERROR) {
        return absl::ResourceExhaustedError(absl::StrCat(origin, ": out of memory inflating"));
      }
      // Z_BUF_ERROR: no progress possible with what is left; the loop
      // feeds more input or ends on a truncated stream.
      if (rc == Z_BUF_ERROR && z.avail_in == 0 && in_at == stream.size()) break;
      if (rc != Z_STREAM_END && enough && enough(out)) return out;
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(origin, ": out of memory inflating"));
  }
  const std::size_t trailing = z.avail_in + (stream.size() - in_at);
  if (rc != Z_STREAM_END) {
    return absl::DataLossError(absl::StrCat(origin, ": the zlib stream is truncated"));
  }
  if (trailing != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": ", trailing, " bytes after the end of the zlib stream"));
  }
  return out;
}

}  // namespace internal
}  // namespace semmap
