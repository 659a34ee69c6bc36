// The record's zlib streams (io/deflate.h): a stream of one piece is the
// one zlib's single call writes; a larger one, deflated in pieces on
// several cores, inflates to its bytes, is the same however its input is
// split into views (a dictionary that spans views included), is within a
// per cent of the single call's size, and is one stream: zlib's own
// inflate reads it to its end and its checksum.
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "catch2/catch.hpp"
#include "io/deflate.h"

namespace {

using semmap::internal::Deflate;
using semmap::internal::Inflate;

// Text that compresses as a serialized graph does: names that repeat with
// counters, and a little noise.
std::string Corpus(std::size_t bytes) {
  std::string out;
  std::uint64_t x = 88172645463325252ull;
  for (std::size_t i = 0; out.size() < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out += "model.layers." + std::to_string(i % 97) + ".self_attn/MatMul_" + std::to_string(x % 1000);
    out += static_cast<char>(x >> 56);
  }
  out.resize(bytes);
  return out;
}

// zlib's compress2 at the default level: the single call.
std::string SingleCall(const std::string& bytes) {
  uLongf size = compressBound(bytes.size());
  std::string out(size, '\0');
  REQUIRE(compress2(reinterpret_cast<Bytef*>(&out[0]), &size,
                    reinterpret_cast<const Bytef*>(bytes.data()), bytes.size(),
                    Z_DEFAULT_COMPRESSION) == Z_OK);
  out.resize(size);
  return out;
}

TEST_CASE("Deflate: one piece is the single call's stream") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{100000}, std::size_t{8} << 20}) {
    const std::string bytes = Corpus(n);
    auto z = Deflate(bytes);
    REQUIRE(z.ok());
    CHECK(*z == SingleCall(bytes));
  }
}

TEST_CASE("Deflate: a stream in pieces is one zlib stream of the same bytes") {
  const std::string bytes = Corpus((std::size_t{8} << 20) * 3 + 12345);
  auto whole = Deflate(bytes);
  REQUIRE(whole.ok());
  const std::string single = SingleCall(bytes);
  CHECK(*whole != single);  // in pieces
  CHECK(whole->size() < single.size() + single.size() / 100);
  auto back = Inflate(*whole, bytes.size(), "test");
  REQUIRE(back.ok());
  CHECK(*back == bytes);
  // zlib's own reader: to the stream's end, its checksum checked.
  uLongf size = bytes.size();
  std::string out(size, '\0');
  REQUIRE(uncompress(reinterpret_cast<Bytef*>(&out[0]), &size,
                     reinterpret_cast<const Bytef*>(whole->data()), whole->size()) == Z_OK);
  CHECK(out == bytes);

  // The same stream from views that split it anywhere: before a piece's
  // boundary by less than the 32 KB dictionary, an empty view, the rest.
  const absl::string_view all(bytes);
  const std::size_t cut = (std::size_t{8} << 20) - 1000;
  const std::vector<absl::string_view> views = {all.substr(0, cut), absl::string_view(),
                                                all.substr(cut, 500), all.substr(cut + 500)};
  auto split = Deflate(views);
  REQUIRE(split.ok());
  CHECK(*split == *whole);
}

TEST_CASE("Deflate: an inflated size above the limit is refused") {
  const std::string bytes = Corpus((std::size_t{8} << 20) + 1);
  auto z = Deflate(bytes);
  REQUIRE(z.ok());
  CHECK_FALSE(Inflate(*z, bytes.size() - 1, "test").ok());
  CHECK(Inflate(*z, bytes.size(), "test").ok());
}

}  // namespace
