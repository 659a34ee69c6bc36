#include "graph/wire_reader.h"

namespace semmap {
namespace internal {
namespace {

// Groups are deprecated and never written by ONNX tools, but protobuf
// accepts them as unknown fields, so they are skipped with a bound.
constexpr int kMaxGroupDepth = 32;

}  // namespace

bool WireReader::ReadVarintSlow(const char** p, const char* end, std::uint64_t* out) {
  std::uint64_t value = 0;
  const char* q = *p;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q == end) return false;
    const unsigned char byte = static_cast<unsigned char>(*q++);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) {
      *p = q;
      *out = value;
      return true;
    }
  }
  return false;  // more than 10 bytes
}

bool WireReader::SkipGroup(std::uint32_t number, const char* at) {
  std::uint32_t open[kMaxGroupDepth];
  int depth = 0;
  open[depth++] = number;
  while (depth > 0) {
    const char* tag_at = p_;
    std::uint64_t tag;
    if (!ReadVarint(&p_, end_, &tag)) return Fail("unterminated group", at, number);
    if (p_ - tag_at > 5) return Fail("overlong varint tag", tag_at, 0);
    tag = static_cast<std::uint32_t>(tag);  // as protobuf reads tags
    const std::uint64_t field = tag >> 3;
    if (field == 0 || field > 0x1fffffff) return Fail("invalid field number", tag_at, 0);
    std::uint64_t value;
    switch (static_cast<WireType>(tag & 7)) {
      case WireType::kVarint:
        if (!ReadVarint(&p_, end_, &value)) return Fail("truncated varint", tag_at, field);
        break;
      case WireType::kFixed64:
        if (!Skip(8, tag_at, static_cast<std::uint32_t>(field))) return false;
        break;
      case WireType::kFixed32:
        if (!Skip(4, tag_at, static_cast<std::uint32_t>(field))) return false;
        break;
      case WireType::kLen:
        if (!ReadVarint(&p_, end_, &value) ||
            value > static_cast<std::uint64_t>(end_ - p_)) {
          return Fail("length-delimited field runs past the end of its group", tag_at, field);
        }
        p_ += value;
        break;
      case WireType::kStartGroup:
        if (depth == kMaxGroupDepth) return Fail("groups nested too deep", tag_at, field);
        open[depth++] = static_cast<std::uint32_t>(field);
        break;
      case WireType::kEndGroup:
        if (open[depth - 1] != field) return Fail("mismatched end-group tag", tag_at, field);
        --depth;
        break;
      default:
        return Fail("invalid wire type", tag_at, static_cast<std::uint32_t>(field));
    }
  }
  return true;
}

}  // namespace internal
}  // namespace semmap
