// The one way a failed system call becomes a Status (semmap/system_error.h):
// the code follows the error, the message names the path, the action and
// the system's words, and the errno rides along as the payload.
#ifndef SEMMAP_SRC_IO_SYSTEM_ERROR_H_
#define SEMMAP_SRC_IO_SYSTEM_ERROR_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// The code for `err`: NotFound (ENOENT, ENOTDIR), PermissionDenied (EACCES,
// EPERM, EROFS), ResourceExhausted (ENOSPC, EDQUOT, EFBIG, ENOMEM), else
// absl::ErrnoToStatusCode's.
absl::StatusCode OsErrorCode(int err);

// "<path>: <action>: <strerror(err)>" ("<path>: <strerror(err)>" when
// `action` is empty), with OsErrorCode(err) and the errno as the payload.
absl::Status OsError(absl::string_view path, absl::string_view action, int err);

// `status` with `err` as its payload (for a message worded by its caller).
absl::Status WithSystemError(absl::Status status, int err);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_SYSTEM_ERROR_H_
