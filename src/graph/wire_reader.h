// A bounds-checked reader of the protobuf wire format over bytes in memory
// (usually a memory-mapped file). It walks one message's fields without
// materialising anything; length-delimited payloads come back as views and
// are skipped in O(1), so a tensor's raw_data costs one varint read.
//
// Offsets are 64-bit pointer differences: there is no 2 GB limit.
#ifndef SEMMAP_SRC_GRAPH_WIRE_READER_H_
#define SEMMAP_SRC_GRAPH_WIRE_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

enum class WireType : std::uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Starts loading the bytes `kPrefetchBytes` past `at`, where a walk over
// consecutive messages (a graph's nodes) reads next: each message's place
// is known only once the one before it is read, so without it every
// message's first cache line is a miss of its own. Never faults, even past
// the end of the bytes.
inline constexpr std::size_t kPrefetchBytes = 4096;
inline void PrefetchAhead(const char* at) {
#if defined(__GNUC__) || defined(__clang__)
  // An address, not a pointer into the bytes: it may lie past their end.
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(at) +
                                                   kPrefetchBytes));
#else
  (void)at;
#endif
}

struct WireField {
  std::uint32_t number = 0;
  WireType type = WireType::kVarint;
  std::uint64_t varint = 0;  // value of a kVarint field
  absl::string_view bytes;   // payload of a kLen field
};

// Why a read failed, with the place; formatted by the caller, which knows
// the file name and where the file begins.
struct WireError {
  const char* what = nullptr;  // null while no error
  const char* at = nullptr;    // first byte of the offending tag or value
  std::uint32_t field = 0;     // field number, when known
  std::uint64_t length = 0;    // claimed length of a kLen field
  std::uint64_t left = 0;      // bytes left in the enclosing message
  const char* end = nullptr;   // end of the enclosing message
};

class WireReader {
 public:
  explicit WireReader(absl::string_view message)
      : p_(message.data()), end_(message.data() + message.size()) {}

  // Reads the next field into `f`. Fixed-width values and groups are
  // skipped (their fields are still reported, without a value). Returns
  // false at the end of the message or on malformed input; ok() tells which.
  bool Next(WireField* f) {
    if (p_ == end_) return false;
    const char* at = p_;
    std::uint64_t tag;
    // As protobuf reads it: at most 5 bytes, bits above 32 dropped.
    if (!ReadVarint(&p_, end_, &tag) || p_ - at > 5) {
      return Fail("truncated or overlong varint tag", at, 0);
    }
    tag = static_cast<std::uint32_t>(tag);
    const std::uint64_t number = tag >> 3;
    if (number == 0 || number > 0x1fffffff) return Fail("invalid field number", at, 0);
    f->number = static_cast<std::uint32_t>(number);
    f->type = static_cast<WireType>(tag & 7);
    switch (f->type) {
      case WireType::kVarint:
        if (!ReadVarint(&p_, end_, &f->varint)) {
          return Fail("truncated or overlong varint", at, f->number);
        }
        return true;
      case WireType::kLen: {
        std::uint64_t len;
        if (!ReadVarint(&p_, end_, &len)) {
          return Fail("truncated or overlong length", at, f->number);
        }
        const std::uint64_t left = static_cast<std::uint64_t>(end_ - p_);
        if (len > left) {
          error_.length = len;
          error_.left = left;
          return Fail("length-delimited field runs past the end of its enclosing message", at,
                      f->number);
        }
        f->bytes = absl::string_view(p_, static_cast<std::size_t>(len));
        p_ += len;
        return true;
      }
      case WireType::kFixed64:
        return Skip(8, at, f->number);
      case WireType::kFixed32:
        return Skip(4, at, f->number);
      case WireType::kStartGroup:
        return SkipGroup(f->number, at);
      case WireType::kEndGroup:
        return Fail("unexpected end-group tag", at, f->number);
    }
    return Fail("invalid wire type", at, f->number);
  }

  bool ok() const { return error_.what == nullptr; }
  // The first byte of the next field's tag (the end of the message when
  // none is left): with the previous position, the span a field occupies.
  const char* position() const { return p_; }
  const WireError& error() const { return error_; }

  // Reads one base-128 varint (at most 10 bytes) and advances `*p`.
  static bool ReadVarint(const char** p, const char* end, std::uint64_t* out) {
    if (*p < end && static_cast<unsigned char>(**p) < 0x80) {
      *out = static_cast<unsigned char>(*(*p)++);
      return true;
    }
    return ReadVarintSlow(p, end, out);
  }

 private:
  static bool ReadVarintSlow(const char** p, const char* end, std::uint64_t* out);
  bool Skip(std::uint64_t n, const char* at, std::uint32_t field) {
    if (static_cast<std::uint64_t>(end_ - p_) < n) {
      return Fail("truncated fixed-width value", at, field);
    }
    p_ += n;
    return true;
  }
  bool SkipGroup(std::uint32_t number, const char* at);
  bool Fail(const char* what, const char* at, std::uint32_t field) {
    error_.what = what;
    error_.at = at;
    error_.field = field;
    error_.end = end_;
    p_ = end_;
    return false;
  }

  const char* p_;
  const char* end_;
  WireError error_;
};

// Iterates a packed repeated varint payload; false on a malformed one.
template <typename Fn>
bool ForEachPackedVarint(absl::string_view payload, Fn fn) {
  const char* p = payload.data();
  const char* end = p + payload.size();
  while (p < end) {
    std::uint64_t v;
    if (!WireReader::ReadVarint(&p, end, &v)) return false;
    fn(v);
  }
  return true;
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_WIRE_READER_H_
