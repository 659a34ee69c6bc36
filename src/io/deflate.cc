#include "io/deflate.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <new>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/parallel.h"

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
  const absl::string_view pieces[] = {bytes};
  return Deflate(pieces);
}

namespace {

// The stream is cut at fixed offsets of its bytes into pieces of this
// size, each deflated on its own with the 32 KB before it as its
// dictionary, and the raw pieces joined (as pigz does): the bytes written
// depend on the input alone, not on how many cores ran. A stream of one
// piece is the one zlib writes in a single call.
constexpr std::size_t kPiece = std::size_t{8} << 20;
constexpr std::size_t kWindow = std::size_t{32} << 10;

// The bytes [at, at + length) of the concatenation of `pieces`, in order,
// as views into them.
std::vector<absl::string_view> Slice(absl::Span<const absl::string_view> pieces, std::size_t at,
                                     std::size_t length) {
  std::vector<absl::string_view> out;
  for (absl::string_view piece : pieces) {
    if (length == 0) break;
    if (at >= piece.size()) {
      at -= piece.size();
      continue;
    }
    const absl::string_view part = piece.substr(at, length);
    out.push_back(part);
    length -= part.size();
    at = 0;
  }
  return out;
}

// Feeds `input` to `z`, then flushes with `flush` (Z_SYNC_FLUSH ends on a
// byte boundary; Z_FINISH ends the stream), appending to `out`.
int Drain(z_stream& z, const std::vector<absl::string_view>& input, int flush, std::string* out) {
  int rc = Z_OK;
  for (std::size_t k = 0; k < input.size(); ++k) {
    std::size_t in_at = 0;
    const absl::string_view bytes = input[k];
    do {
      const std::size_t in_now = std::min(kChunk, bytes.size() - in_at);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_at));
      z.avail_in = static_cast<uInt>(in_now);
      const bool last = k + 1 == input.size() && in_at + in_now == bytes.size();
      const int mode = last ? flush : Z_NO_FLUSH;
      do {
        const std::size_t before = out->size();
        out->resize(before + kChunk);
        z.next_out = reinterpret_cast<Bytef*>(&(*out)[before]);
        z.avail_out = static_cast<uInt>(kChunk);
        rc = deflate(&z, mode);
        out->resize(before + kChunk - z.avail_out);
        if (rc == Z_STREAM_ERROR) return rc;
      } while (z.avail_out == 0 && rc != Z_STREAM_END);
      in_at += in_now - z.avail_in;
    } while (in_at < bytes.size());
  }
  return rc;
}

}  // namespace

absl::StatusOr<std::string> Deflate(absl::Span<const absl::string_view> pieces) try {
  std::size_t total = 0;
  for (absl::string_view piece : pieces) total += piece.size();
  const std::size_t count = std::max<std::size_t>(1, (total + kPiece - 1) / kPiece);
  if (count == 1) {
    Deflating stream;
    z_stream& z = stream.z;
    if (deflateInit(&z, Z_DEFAULT_COMPRESSION) != Z_OK) {
      return absl::ResourceExhaustedError("out of memory starting a zlib stream");
    }
    std::string out;
    out.reserve(total / 4 + 64);
    std::vector<absl::string_view> input = Slice(pieces, 0, total);
    if (input.empty()) input.emplace_back();
    if (Drain(z, input, Z_FINISH, &out) != Z_STREAM_END) {
      return absl::InternalError("zlib could not compress the record");
    }
    return out;
  }
  // Each piece raw (no header, no checksum), all but the last ending on a
  // byte boundary, between zlib's header and the whole input's Adler-32.
  std::vector<std::string> deflated(count);
  std::vector<uLong> checksums(count);
  std::vector<int> failed(count, 0);
  const std::size_t workers = WorkerCount(count, 1, 8);
  RunWorkers(workers, [&](std::size_t worker) {
    for (std::size_t i = worker; i < count; i += workers) {
      const std::size_t at = i * kPiece;
      const std::vector<absl::string_view> input = Slice(pieces, at, std::min(kPiece, total - at));
      Deflating stream;
      z_stream& z = stream.z;
      if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
          Z_OK) {
        failed[i] = 1;
        return;
      }
      if (i > 0) {
        std::string window;
        for (absl::string_view part : Slice(pieces, at - std::min(at, kWindow), std::min(at, kWindow))) {
          window.append(part.data(), part.size());
        }
        deflateSetDictionary(&z, reinterpret_cast<const Bytef*>(window.data()),
                             static_cast<uInt>(window.size()));
      }
      uLong sum = adler32(0L, Z_NULL, 0);
      for (absl::string_view part : input) {
        for (std::size_t k = 0; k < part.size(); k += kChunk) {
          const std::size_t n = std::min(kChunk, part.size() - k);
          sum = adler32(sum, reinterpret_cast<const Bytef*>(part.data() + k), static_cast<uInt>(n));
        }
      }
      checksums[i] = sum;
      deflated[i].reserve(input.empty() ? 64 : kPiece / 4);
      const bool last = i + 1 == count;
      const int rc = Drain(z, input, last ? Z_FINISH : Z_SYNC_FLUSH, &deflated[i]);
      // A flush whose output filled the buffer exactly is asked once more
      // and has nothing left to give (Z_BUF_ERROR): done all the same.
      const bool done = last ? rc == Z_STREAM_END : rc == Z_OK || rc == Z_BUF_ERROR;
      if (!done) failed[i] = rc == Z_MEM_ERROR ? 2 : 1;
    }
  });
  for (int f : failed) {
    if (f == 2) return absl::ResourceExhaustedError("out of memory compressing the record");
    if (f != 0) return absl::InternalError("zlib could not compress the record");
  }
  std::size_t size = 2 + 4;
  for (const std::string& d : deflated) size += d.size();
  std::string out;
  out.reserve(size);
  out += "\x78\x9c";  // deflate, 32 KB window, the default level (RFC 1950)
  uLong sum = checksums[0];
  for (std::size_t i = 0; i < count; ++i) {
    out += deflated[i];
    deflated[i] = std::string();
    if (i > 0) {
      const std::size_t length = std::min(kPiece, total - i * kPiece);
      sum = adler32_combine(sum, checksums[i], static_cast<z_off_t>(length));
    }
  }
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((sum >> shift) & 0xff);
  return out;
} catch (const std::bad_alloc&) {
  return absl::ResourceExhaustedError("out of memory compressing the record");
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
