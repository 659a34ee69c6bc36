// WritePiecesAtomically (src/io/atomic_write.h): the output is the
// pieces in order, whether a piece is written from memory or copied by the
// kernel from the mapped source file, and a source that changed under the
// mapping never yields a silently wrong output.
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "catch2/catch.hpp"
#include "io/atomic_write.h"
#include "io/mapped_file.h"
#include "temp_dir.h"

using semmap::internal::MappedFile;
using semmap::internal::PieceSource;
using semmap::internal::WritePiecesAtomically;
using semmap_test::ReadBytes;
using semmap_test::TempDir;
using semmap_test::WriteBytes;

namespace {

std::string Pattern(std::size_t size) {
  std::string s(size, '\0');
  for (std::size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 131 + i / 4096) & 0xff);
  return s;
}

std::string Concat(const std::vector<absl::string_view>& pieces) {
  std::string out;
  for (absl::string_view p : pieces) out.append(p.data(), p.size());
  return out;
}

}  // namespace

TEST_CASE("Pieces are written in order, large mapped ones copied from the file",
          "[write][pieces]") {
  TempDir tmp;
  const std::string input = tmp.file("in.bin");
  WriteBytes(input, Pattern(5 << 20));
  auto file = MappedFile::Open(input, std::uint64_t{1} << 30);
  REQUIRE(file.ok());
  REQUIRE(file->inode() != 0);
  const absl::string_view map = file->bytes();
  const std::string head = "head", mid = "middle bytes";
  // Large pieces (kernel copies), a small one from the mapping, pieces from
  // memory, an empty one, and a large piece ending at the file's end.
  const std::vector<absl::string_view> pieces = {
      head, map.substr(7, 2 << 20), mid, map.substr(3 << 20, 1000), absl::string_view(),
      map.substr((3 << 20) + 5, (2 << 20) - 5)};
  const PieceSource source{map, input, file->device(), file->inode()};
  const std::string out = tmp.file("out.bin");
  REQUIRE(WritePiecesAtomically(out, pieces, nullptr, &source).ok());
  CHECK(ReadBytes(out) == Concat(pieces));

  SECTION("a path that names another file now: the mapping is read") {
    const std::string moved = tmp.file("moved.bin");
    REQUIRE(::rename(input.c_str(), moved.c_str()) == 0);
    WriteBytes(input, std::string(5 << 20, 'x'));  // same size, other bytes
    REQUIRE(WritePiecesAtomically(out, pieces, nullptr, &source).ok());
    CHECK(ReadBytes(out) == Concat(pieces));
  }
  SECTION("a stream output takes the same bytes") {
    const std::string fifo = tmp.file("fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::string got;
    std::thread reader([&] { got = ReadBytes(fifo); });
    REQUIRE(WritePiecesAtomically(fifo, pieces, nullptr, &source).ok());
    reader.join();
    CHECK(got == Concat(pieces));
  }
}

TEST_CASE("A source that shrank under the mapping is caught before the rename",
          "[write][pieces]") {
  TempDir tmp;
  const std::string input = tmp.file("in.bin");
  WriteBytes(input, Pattern(4 << 20));
  auto file = MappedFile::Open(input, std::uint64_t{1} << 30);
  REQUIRE(file.ok());
  const absl::string_view map = file->bytes();
  const std::vector<absl::string_view> pieces = {map.substr(0, 4 << 20)};
  const PieceSource source{map, input, file->device(), file->inode()};
  const std::string out = tmp.file("out.bin");
  WriteBytes(out, "old output");
  REQUIRE(::truncate(input.c_str(), 1 << 20) == 0);
  const absl::Status status = WritePiecesAtomically(
      out, pieces,
      [&] {
        return file->truncated() ? absl::DataLossError("in.bin shrank") : absl::OkStatus();
      },
      &source);
  CAPTURE(status.message());
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StartsWith(status.message(), input));
  CHECK(ReadBytes(out) == "old output");
}
