#include "graph/onnx_fields.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace semmap {
namespace internal {

absl::Status MalformedOnnx(absl::string_view origin, absl::string_view file, const WireReader& r,
                           const char* message) {
  const WireError& e = r.error();
  std::string text =
      absl::StrCat(origin, ": not a valid ONNX model: byte offset ",
                   static_cast<std::uint64_t>(e.at - file.data()), ": ", e.what, " in ", message);
  if (e.field != 0) absl::StrAppend(&text, " (field ", e.field, ")");
  if (e.length != 0 || e.left != 0) {
    absl::StrAppend(&text, ": claims ", e.length, " bytes, ", e.left, " left");
    if (e.end == file.data() + file.size()) absl::StrAppend(&text, " (file truncated?)");
  }
  return absl::InvalidArgumentError(text);
}

}  // namespace internal
}  // namespace semmap
