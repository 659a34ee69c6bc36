// Turning libsemmap's absl::Status into Python exceptions.
#ifndef SEMMAP_PYTHON_SRC_ERRORS_H_
#define SEMMAP_PYTHON_SRC_ERRORS_H_

#include "absl/status/status.h"

namespace semmap_python {

// What a NotFound means where the status came from: a file that is missing
// (FileNotFoundError) or a key that is (KeyError: no such node, module,
// class or layer).
enum class NotFoundMeans { kFile, kKey };

// Raises the Python exception for a non-ok `status`, carrying its message:
//   NotFound            FileNotFoundError or KeyError (see above)
//   InvalidArgument,
//   FailedPrecondition,
//   OutOfRange          ValueError
//   PermissionDenied    PermissionError
//   DataLoss            OSError
//   ResourceExhausted   MemoryError
//   anything else       RuntimeError
// A status carrying the system's error (semmap/system_error.h) is an
// OSError whatever its code, with that errno: the type above where that is
// an OSError, else OSError(errno, message) (so PermissionError, or OSError
// with errno ENOSPC for a full disk). Does nothing for an ok status. Must be
// called with the GIL held.
void ThrowIfError(const absl::Status& status, NotFoundMeans not_found = NotFoundMeans::kFile);

}  // namespace semmap_python

#endif  // SEMMAP_PYTHON_SRC_ERRORS_H_
