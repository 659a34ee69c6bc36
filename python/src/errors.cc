#include "errors.h"

#include <string>

#include <nanobind/nanobind.h>

#include "absl/strings/str_cat.h"
#include "semmap/system_error.h"

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
  // Messages quote names and arguments whole: above 1000 bytes, keep the
  // head (the file, the place) and the tail (the cause), as the tool does.
  const absl::string_view text = status.message();
  std::string message(text);
  if (text.size() > 1000) {
    std::size_t head = 640, tail = text.size() - 256;
    auto continuation = [text](std::size_t i) {
      return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xc0) == 0x80;
    };
    while (continuation(head)) ++head;
    while (continuation(tail)) ++tail;
    message = absl::StrCat(text.substr(0, head), " [... ", tail - head, " bytes ...] ",
                           text.substr(tail));
  }
  // File names need not be UTF-8: undecodable bytes become U+FFFD, as in
  // semmap's JSON output, instead of a UnicodeDecodeError.
  PyObject* text_object = PyUnicode_DecodeUTF8(message.data(),
                                               static_cast<Py_ssize_t>(message.size()), "replace");
  if (text_object == nullptr) throw nb::python_error();
  // The system's error (semmap/system_error.h) is always an OSError with
  // its errno: the type above where that is one (FileNotFoundError,
  // PermissionError), else OSError(errno, message), which Python makes the
  // subclass the number names. A full disk is an OSError, not a
  // MemoryError; a missing node or module stays a KeyError.
  if (const int err = semmap::SystemErrorOf(status); err != 0 && type != PyExc_KeyError) {
    if (!PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type),
                          reinterpret_cast<PyTypeObject*>(PyExc_OSError))) {
      type = PyExc_OSError;
    }
    PyObject* args = Py_BuildValue("(iN)", err, text_object);
    if (args == nullptr) throw nb::python_error();
    PyErr_SetObject(type, args);
    Py_DECREF(args);
    throw nb::python_error();
  }
  PyErr_SetObject(type, text_object);
  Py_DECREF(text_object);
  throw nb::python_error();
}

}  // namespace semmap_python
