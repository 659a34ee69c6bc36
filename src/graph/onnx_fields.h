// Field numbers of onnx.proto (onnx 1.16, for NodeProto.metadata_props)
// and the wire-type tests, for the code that reads and writes ONNX files at
// the protobuf wire level (wire_loader, wire_model_index, wire_writer,
// extract): one table instead of one per file.
#ifndef SEMMAP_SRC_GRAPH_ONNX_FIELDS_H_
#define SEMMAP_SRC_GRAPH_ONNX_FIELDS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "graph/wire_reader.h"

namespace semmap {
namespace internal {

namespace model_field {  // ModelProto
constexpr std::uint32_t kIrVersion = 1, kProducerName = 2, kProducerVersion = 3, kDomain = 4,
                        kModelVersion = 5, kGraph = 7, kOpsetImport = 8, kMetadataProps = 14,
                        kFunctions = 25;
}  // namespace model_field
namespace graph_field {  // GraphProto
constexpr std::uint32_t kNode = 1, kName = 2, kInitializer = 5, kDocString = 10, kInput = 11,
                        kOutput = 12, kValueInfo = 13, kSparseInitializer = 15;
}  // namespace graph_field
namespace node_field {  // NodeProto
constexpr std::uint32_t kInput = 1, kOutput = 2, kName = 3, kOpType = 4, kAttribute = 5,
                        kDocString = 6, kDomain = 7, kMetadataProps = 9;
}  // namespace node_field
namespace attribute_field {  // AttributeProto
constexpr std::uint32_t kName = 1, kG = 6, kGraphs = 11, kType = 20;
constexpr std::int32_t kTypeGraph = 5, kMaxKnownType = 14;  // AttributeProto.AttributeType
}  // namespace attribute_field
namespace tensor_field {  // TensorProto
constexpr std::uint32_t kDims = 1, kDataType = 2, kName = 8, kExternalData = 13,
                        kDataLocation = 14;
constexpr std::int32_t kExternal = 1;  // TensorProto.DataLocation
}  // namespace tensor_field
namespace function_field {  // FunctionProto
constexpr std::uint32_t kName = 1, kInput = 4, kNode = 7, kDomain = 10;
}  // namespace function_field
constexpr std::uint32_t kSparseValues = 1;                       // SparseTensorProto.values
constexpr std::uint32_t kValueInfoName = 1, kValueInfoType = 2;  // ValueInfoProto
constexpr std::uint32_t kEntryKey = 1, kEntryValue = 2;          // StringStringEntryProto
constexpr std::uint32_t kOpsetDomain = 1, kOpsetVersion = 2;     // OperatorSetIdProto

inline bool IsLen(const WireField& f) { return f.type == WireType::kLen; }
inline bool IsVarint(const WireField& f) { return f.type == WireType::kVarint; }

// InvalidArgument for the read `r` failed in `file` (the whole file, for
// the byte offset), in a `message` ("NodeProto"): "<origin>: not a valid
// ONNX model: byte offset N: <what> in <message> (field F): claims L bytes,
// K left (file truncated?)".
absl::Status MalformedOnnx(absl::string_view origin, absl::string_view file, const WireReader& r,
                           const char* message);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_ONNX_FIELDS_H_
