// Rewriting a serialized ONNX model at the wire level: per-node edits of
// NodeProto fields, spliced into the file's own bytes. Nothing is parsed
// with protobuf and nothing is decoded that is not edited: every byte range
// outside the edited fields (tensor payloads, value types, attributes) is
// copied verbatim, and only the length prefixes of the messages that
// enclose an edited node are re-encoded. Offsets are 64-bit, so there is no
// 2 GB limit, and no onnx.proto version is assumed: NodeProto.metadata_props
// is field 9 whether or not the onnx library semmap was built with knows it.
//
//   internal::NodeEditor editor = [&](const NodeView& node, NodeEdit* edit) {
//     edit->drop_keys.push_back("module@semmap");
//     edit->add_metadata.emplace_back("module@semmap", "...");
//     return absl::OkStatus();
//   };
//   SEMMAP_ASSIGN_OR_RETURN(ModelRewrite rewrite,
//                           ModelRewrite::Plan(file.bytes(), path, editor, 64));
//   SEMMAP_RETURN_IF_ERROR(WriteFileAtomically(output, rewrite.pieces()));
//
// Plan walks the model twice: once in Graph's node order (graph.h: each
// node, then the bodies of its GRAPH/GRAPHS attributes in attribute order,
// recursively; model-local functions last), asking the editor about each
// node and computing the new bytes of its edited fields; then once in byte
// order, computing the new sizes bottom-up and the list of pieces to write.
#ifndef SEMMAP_SRC_GRAPH_WIRE_WRITER_H_
#define SEMMAP_SRC_GRAPH_WIRE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// Protobuf's encodings, for writers that assemble messages from pieces.
void AppendVarint(std::string* out, std::uint64_t value);
// A length-delimited field's tag and length, without the payload.
void AppendLenHeader(std::string* out, std::uint32_t number, std::uint64_t length);
// Tag, length and payload.
void AppendLenField(std::string* out, std::uint32_t number, absl::string_view payload);

// What to change in one NodeProto. The editor fills a cleared edit.
struct NodeEdit {
  // metadata_props entries (field 9) to remove: key equal to one of
  // drop_keys or starting with one of drop_key_prefixes. An entry that is
  // not a valid StringStringEntryProto is never removed.
  std::vector<std::string> drop_keys;
  std::vector<std::string> drop_key_prefixes;
  // Entries appended after the node's last field, in this order.
  std::vector<std::pair<std::string, std::string>> add_metadata;
  // New values of NodeProto.name (field 3) and doc_string (field 6): the
  // first occurrence is replaced in place and later ones removed (protobuf
  // keeps the last one of a singular field, so one is left); appended when
  // the node has none.
  std::optional<std::string> name;
  std::optional<std::string> doc_string;

  void Clear();
};

// The node an editor is asked about.
struct NodeView {
  std::size_t index = 0;     // position in Graph's traversal order (its NodeId)
  absl::string_view name;    // as protobuf reads them: the last occurrence
  absl::string_view op_type;
  std::uint64_t offset = 0;  // byte offset of the NodeProto's payload
};

// Called once per node, in Graph's order. An error stops the rewrite and is
// returned by Plan unchanged.
using NodeEditor = std::function<absl::Status(const NodeView& node, NodeEdit* edit)>;

// The rewritten model as pieces to be written in order: views into the
// input bytes (which must outlive this object) and into buffers it owns.
class ModelRewrite {
 public:
  // Walks `model` (the serialized ModelProto, usually a memory map of the
  // file `origin`). InvalidArgument naming `origin` and the byte offset for
  // a malformed message, a model without a graph, or subgraphs nested
  // deeper than `max_subgraph_depth`; the editor's own errors unchanged.
  static absl::StatusOr<ModelRewrite> Plan(absl::string_view model, absl::string_view origin,
                                           const NodeEditor& editor, int max_subgraph_depth);

  ModelRewrite(ModelRewrite&&) noexcept;
  ModelRewrite& operator=(ModelRewrite&&) noexcept;
  ~ModelRewrite();

  const std::vector<absl::string_view>& pieces() const { return pieces_; }
  std::uint64_t size() const { return size_; }
  std::size_t nodes() const { return nodes_; }
  // Initializers of the main graph and of attribute subgraphs whose
  // data_location is EXTERNAL.
  std::size_t external_tensors() const { return external_tensors_; }
  // The pieces concatenated (tests, small models).
  std::string ToString() const;

 private:
  class Arena;
  ModelRewrite();

  std::unique_ptr<Arena> arena_;  // owns the new bytes the pieces point to
  std::vector<absl::string_view> pieces_;
  std::uint64_t size_ = 0;
  std::size_t nodes_ = 0;
  std::size_t external_tensors_ = 0;

  friend class RewritePlanner;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_GRAPH_WIRE_WRITER_H_
