// Replacing model-level metadata_props entries (ModelProto field 14) of a
// serialized ONNX model at the wire level: the file's bytes are kept as
// they are except the removed entries, and the new entries are appended as
// the model's last fields (a top-level field needs no enclosing length to
// change). Tensor payloads are never decoded or copied in memory: the plan
// is a list of views into the file plus one small buffer.
#ifndef SEMMAP_SRC_GRAPH_MODEL_METADATA_EDIT_H_
#define SEMMAP_SRC_GRAPH_MODEL_METADATA_EDIT_H_

#include <cstdint>
#include <functional>
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
  // outlive the edit) and into `owned`.
  std::vector<absl::string_view> pieces;
  std::vector<std::unique_ptr<std::string>> owned;  // new bytes, encoded
  std::uint64_t size = 0;                           // bytes of all pieces
  std::size_t removed = 0;                          // entries dropped
};

// The main graph's new doc_string given its current one ("" when none).
using GraphDocEdit = std::function<std::string(absl::string_view current)>;

// Drops every model metadata entry whose key equals `drop_key` and appends
// `add` (key, value) in order. With `graph_doc`, the main graph's
// doc_string (GraphProto field 10) becomes what it returns: the last
// GraphProto of the model loses its doc_string fields and gets the new one
// as its last field, its length prefix re-encoded (the graph's other bytes
// are views, as are the tensors'). InvalidArgument naming `origin` and the
// byte offset when `model` (or, with `graph_doc`, its last graph) is not a
// well-formed message at its top level.
absl::StatusOr<ModelMetadataEdit> PlanModelMetadataEdit(
    absl::string_view model, absl::string_view origin, absl::string_view drop_key,
    const std::vector<std::pair<std::string, std::string>>& add,
    const GraphDocEdit& graph_doc = nullptr);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_MODEL_METADATA_EDIT_H_
