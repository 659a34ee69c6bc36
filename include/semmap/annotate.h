// Annotate: write a copy of an ONNX model whose nodes say which module
// produced them, for viewers (Netron, Model Explorer) and downstream tools.
//
//   semmap::AnnotateOptions options;
//   absl::StatusOr<semmap::AnnotateResult> r =
//       semmap::Annotate(*mapper, "model.onnx", "model.semmap.onnx", options);
//
// Each node gets these metadata_props entries (NodeProto field 9, onnx >= 1.16):
//   semmap.module      module path ("" when unmapped)
//   semmap.class       qualified class ("" when unknown)
//   semmap.confidence  in [0, 1], shortest decimal form
//   semmap.strategy    StrategyName()
//   namespace          (mapped nodes) the dynamo exporter's form,
//                      ": <root class>/<path>: <class>/.../<leaf>: <op>",
//                      one "/"-separated element per ancestor, so viewers
//                      that group by namespace show the module hierarchy.
// semmap.* entries already present are replaced, so annotating twice gives
// the same file. An existing `namespace` (written by the dynamo exporter,
// which knows the true call stack) is kept unless
// AnnotateOptions::overwrite_namespace is set. Everything else in the file
// is preserved, unknown fields included; external data references are
// written unchanged (relative to the output's directory: move the data
// files along when writing elsewhere; see AnnotateResult::external_tensors).
//
// The model at `input` must be the one the mapper's Graph was loaded from;
// nodes are matched by Graph traversal order (see graph.h) and a mismatch in
// count, name or op type is FailedPrecondition.
//
// Output is written atomically (temporary file in the output's directory,
// fsync, rename). Errors (messages start with the file at fault):
//   InvalidArgument   output is the input file and allow_overwrite is false;
//                     output is a directory; input not an ONNX model
//   NotFound          input missing; output directory missing
//   PermissionDenied  output directory not writable
//   FailedPrecondition input is not the model the mapper was built on
// On error nothing is written and the input is untouched. Thread-safe: the
// mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_ANNOTATE_H_
#define SEMMAP_INCLUDE_SEMMAP_ANNOTATE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/mapper.h"

namespace semmap {

struct AnnotateOptions {
  // Allow `output` to be the input file itself (annotate in place).
  bool allow_overwrite = false;
  // Write the `namespace` entry at all.
  bool write_namespace = true;
  // Replace a `namespace` entry the node already has.
  bool overwrite_namespace = false;
  // Also set each node's doc_string to the JSON form
  // {"semmap":{"module":...,"class":...,"confidence":...,"strategy":...}},
  // replacing any doc_string it had.
  bool doc_string_json = false;
  // Inputs above this size are refused (InvalidArgument).
  std::uint64_t max_file_bytes = std::uint64_t{2} << 30;
  int max_subgraph_depth = 64;
};

struct AnnotateResult {
  std::size_t nodes = 0;             // nodes annotated (every node)
  std::size_t mapped = 0;            // of those, with a module
  std::size_t namespaces_written = 0;
  std::size_t namespaces_kept = 0;   // existing namespace entries left alone
  std::size_t external_tensors = 0;  // initializers with external data
  std::uint64_t bytes_written = 0;
};

absl::StatusOr<AnnotateResult> Annotate(const SemanticMapper& mapper, const std::string& input,
                                        const std::string& output,
                                        const AnnotateOptions& options = {});

// The `namespace` value Annotate writes for node `node` ("" when unmapped).
std::string NamespaceOf(const SemanticMapper& mapper, NodeId node);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_ANNOTATE_H_
