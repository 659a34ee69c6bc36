#include "graph/model_proto.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"

namespace semmap {
namespace internal {

absl::Status ParseModelProto(absl::string_view bytes, absl::string_view origin,
                             int max_subgraph_depth, onnx::ModelProto* model) {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected an ONNX model"));
  }
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": ", bytes.size(), " bytes is above protobuf's 2 GB message limit"));
  }
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const std::uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(INT_MAX);
  // Each subgraph level costs three message levels (Graph, Node, Attribute).
  stream.SetRecursionLimit(max_subgraph_depth * 3 + 16);
  if (!model->ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": not a valid ONNX model (protobuf parse failed: truncated, corrupt, "
                "nested too deep, or not an ONNX file)"));
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace semmap
