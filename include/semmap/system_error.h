// The operating system's error behind a failed call, when there is one.
//
// A Status from a failed open, read, map, write, rename or stat carries the
// system's error number (errno) as a payload beside its code: the code
// follows the error (NotFound for a missing file or directory,
// PermissionDenied for a refused access or a read-only file system,
// ResourceExhausted for a full disk, an exceeded quota or no memory, absl's
// canonical mapping for the rest), the message names the path, what was
// being done and the system's words, and the number lets a caller tell
// them apart exactly (the Python package raises OSError with it, so a full
// disk is an OSError with errno ENOSPC, not a MemoryError).
//
//   absl::Status s = semmap::WriteSidecar(mapper, "/mnt/full/out.json", options);
//   if (semmap::SystemErrorOf(s) == ENOSPC) { ... }
#ifndef SEMMAP_INCLUDE_SEMMAP_SYSTEM_ERROR_H_
#define SEMMAP_INCLUDE_SEMMAP_SYSTEM_ERROR_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"

namespace semmap {

// The payload's type URL: its value is the errno in decimal.
inline constexpr absl::string_view kSystemErrorPayload = "semmap.dev/system-error";

// The errno carried by `status`; 0 for OK and for errors that did not come
// from the system (a malformed file, a limit, a refusal of semmap's own).
SEMMAP_EXPORT int SystemErrorOf(const absl::Status& status);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_SYSTEM_ERROR_H_
