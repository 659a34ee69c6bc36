#include "io/system_error.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "semmap/system_error.h"

namespace semmap {

int SystemErrorOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kSystemErrorPayload);
  int err = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &err) || err < 0) return 0;
  return err;
}

namespace internal {

absl::StatusCode OsErrorCode(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case ENOMEM:
      return absl::StatusCode::kResourceExhausted;
    default:
      return absl::ErrnoToStatusCode(err);
  }
}

absl::Status WithSystemError(absl::Status status, int err) {
  if (!status.ok() && err > 0) status.SetPayload(kSystemErrorPayload, absl::Cord(absl::StrCat(err)));
  return status;
}

absl::Status OsError(absl::string_view path, absl::string_view action, int err) {
  std::string message = action.empty() ? absl::StrCat(path, ": ", std::strerror(err))
                                       : absl::StrCat(path, ": ", action, ": ", std::strerror(err));
  return WithSystemError(absl::Status(OsErrorCode(err), message), err);
}

}  // namespace internal
}  // namespace semmap
