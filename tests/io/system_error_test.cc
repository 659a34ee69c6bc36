// The system's error behind a Status (io/system_error.h, semmap/system_error.h):
// the code each errno gets, the message's wording, the errno carried beside
// it and read back by SystemErrorOf; and that the readers and the atomic
// writer report a real failed call that way (a path through a file, a
// directory as the output's parent, a full device).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "io/atomic_write.h"
#include "io/file_io.h"
#include "io/mapped_file.h"
#include "io/system_error.h"
#include "semmap/system_error.h"
#include "temp_dir.h"

namespace {

using semmap::SystemErrorOf;
using semmap::internal::OsError;
using semmap::internal::OsErrorCode;

TEST_CASE("OsError: each errno's code, the message and the errno carried beside it") {
  auto [err, code] = GENERATE(table<int, absl::StatusCode>({
      {ENOENT, absl::StatusCode::kNotFound},
      {ENOTDIR, absl::StatusCode::kNotFound},
      {EACCES, absl::StatusCode::kPermissionDenied},
      {EPERM, absl::StatusCode::kPermissionDenied},
      {EROFS, absl::StatusCode::kPermissionDenied},
      {ENOSPC, absl::StatusCode::kResourceExhausted},
      {EDQUOT, absl::StatusCode::kResourceExhausted},
      {EFBIG, absl::StatusCode::kResourceExhausted},
      {ENOMEM, absl::StatusCode::kResourceExhausted},
      // absl's canonical mapping for the rest.
      {ENAMETOOLONG, absl::StatusCode::kInvalidArgument},
      {EISDIR, absl::StatusCode::kFailedPrecondition},
      {EAGAIN, absl::StatusCode::kUnavailable},
  }));
  CAPTURE(err);
  CHECK(OsErrorCode(err) == code);
  const absl::Status s = OsError("out/x.json", "write failed", err);
  CHECK(s.code() == code);
  CHECK(s.message() == std::string("out/x.json: write failed: ") + std::strerror(err));
  CHECK(SystemErrorOf(s) == err);
  CHECK(OsError("x", "", err).message() == std::string("x: ") + std::strerror(err));
}

TEST_CASE("SystemErrorOf: 0 for OK and for errors of semmap's own") {
  CHECK(SystemErrorOf(absl::OkStatus()) == 0);
  CHECK(SystemErrorOf(absl::InvalidArgumentError("m.json: not valid JSON")) == 0);
  CHECK(SystemErrorOf(absl::ResourceExhaustedError("m.onnx: out of memory")) == 0);
  // A payload that is not a number is not an errno.
  absl::Status odd = absl::InternalError("x");
  odd.SetPayload(semmap::kSystemErrorPayload, absl::Cord("many"));
  CHECK(SystemErrorOf(odd) == 0);
  // The payload survives a copy with a new message, as callers prefix one.
  absl::Status full = OsError("a", "write failed", ENOSPC);
  absl::Status copied(full.code(), "cli: " + std::string(full.message()));
  full.ForEachPayload([&](absl::string_view url, const absl::Cord& v) { copied.SetPayload(url, v); });
  CHECK(SystemErrorOf(copied) == ENOSPC);
}

TEST_CASE("The readers and the atomic writer carry the errno of the call that failed") {
  semmap_test::TempDir dir;
  const std::string file = dir.file("plain");
  std::ofstream(file) << "x";

  // stat("<file>/model.onnx") fails with ENOTDIR: no such file.
  const auto read = semmap::internal::ReadFile(file + "/model.onnx", 1 << 20);
  REQUIRE_FALSE(read.ok());
  CHECK(read.status().code() == absl::StatusCode::kNotFound);
  CHECK(SystemErrorOf(read.status()) == ENOTDIR);
  const auto mapped = semmap::internal::MappedFile::Open(file + "/model.onnx", 1 << 20);
  REQUIRE_FALSE(mapped.ok());
  CHECK(SystemErrorOf(mapped.status()) == ENOTDIR);

  // The output's directory is a file: the temporary file cannot be made.
  const absl::Status write = semmap::internal::WriteFileAtomically(file + "/out.json", "{}");
  REQUIRE_FALSE(write.ok());
  CHECK(absl::StartsWith(write.message(), file + "/out.json"));
  CHECK(SystemErrorOf(write) == ENOTDIR);

  // A full device: the bytes are written through it and every write fails.
  struct stat st;
  if (::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
    const absl::Status full = semmap::internal::WriteFileAtomically("/dev/full", "{}");
    REQUIRE_FALSE(full.ok());
    CHECK(full.code() == absl::StatusCode::kResourceExhausted);
    CHECK(SystemErrorOf(full) == ENOSPC);
  }
}

}  // namespace
