#include "errors.h"

#include <string>

#include <nanobind/nanobind.h>

namespace nb = nanobind;

namespace semmap_python {

void ThrowIfError(const absl::Status& status, NotFoundMeans not_found) {
  if (status.ok()) return;
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      type = not_found == NotFoundMeans::kFile ? PyExc_FileNotFoundError : PyExc_KeyError;
      break;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      type = PyExc_ValueError;
      break;
    case absl::StatusCode::kPermissionDenied:
      type = PyExc_PermissionError;
      break;
    case absl::StatusCode::kDataLoss:
      type = PyExc_OSError;
      break;
    case absl::StatusCode::kResourceExhausted:
      type = PyExc_MemoryError;
      break;
    default:
      break;
  }
  const std::string message(status.message());
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

}  // namespace semmap_python
