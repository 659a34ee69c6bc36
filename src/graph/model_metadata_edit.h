// Replacing model-level metadata_props entries (ModelProto field 14) of a
// serialized ONNX model at the wire level: the file's bytes are kept as
// they are except the removed entries, and the new entries are appended as
// the model's last fields (a top-level field needs no enclosing length to
// change). Tensor payloads are never decoded or copied in memory: the plan
// is a list of views into the file plus one small buffer.
#ifndef SEMMAP_SRC_GRAPH_MODEL_METADATA_EDIT_H_
#define SEMMAP_SRC_GRAPH_MODEL_METADATA_EDIT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

struct ModelMetadataEdit {
  // The new file, in order: views into the model's bytes (which must
  // outlive the edit) and into `appended`.
  std::vector<absl::string_view> pieces;
  std::unique_ptr<std::string> appended;  // the new entries, encoded
  std::uint64_t size = 0;                 // bytes of all pieces
  std::size_t removed = 0;                // entries dropped
};

// Drops every model metadata entry whose key equals `drop_key` and appends
// `add` (key, value) in order. InvalidArgument naming `origin` and the byte
// offset when `model` is not a well-formed message at its top level.
absl::StatusOr<ModelMetadataEdit> PlanModelMetadataEdit(
    absl::string_view model, absl::string_view origin, absl::string_view drop_key,
    const std::vector<std::pair<std::string, std::string>>& add);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_MODEL_METADATA_EDIT_H_
