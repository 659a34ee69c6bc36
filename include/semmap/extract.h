// Extract: the nodes of one module as a standalone ONNX model.
//
//   semmap::ExtractOptions options;
//   absl::StatusOr<semmap::ExtractResult> r = semmap::ExtractModule(
//       *mapper, "model.onnx", "bert.encoder.layer.1", "layer1.onnx", options);
//
// The region is every top-level node (main graph) mapped into the module's
// subtree, plus every Constant node (default domain, no inputs) whose output
// a region node reads, copied so that constants never become inputs. A
// Constant shared with nodes outside is duplicated, which is harmless.
// Nodes with confidence 0 (unmapped) are never part of a region: semmap
// does not know where they belong. If one sits between region nodes, its
// input shows up as a region output and its output as a region input.
//
// The extracted model has:
//   - the region's nodes in their original order (If/Loop/Scan nodes whole,
//     bodies included);
//   - as inputs, the values region nodes (or their bodies) read that are
//     produced outside the region or are graph inputs;
//   - as outputs, the values region nodes produce that are read outside the
//     region (a subgraph body reading an outer value counts) or are graph
//     outputs;
//   - the initializers the region reads (payloads copied), every opset
//     import, the model-local functions, ir_version and producer of the
//     source, and metadata_props kExtractedModuleKey = module path;
//   - the types of its inputs and outputs where the source model states
//     them (graph inputs/outputs, value_info), else none. An exporter that
//     writes no value_info (TorchScript) leaves inner boundaries untyped,
//     which onnx.checker and runtimes refuse: run onnx shape inference on
//     the source first (`onnx.shape_inference.infer_shapes_path`); the
//     mapping is unchanged by it. ExtractResult::untyped counts them.
//
// The source is not parsed with protobuf: its main graph is indexed at the
// wire level over a memory map and the nodes, initializers (payloads
// included) and value infos the region needs are copied byte for byte, so
// sources above 2 GB are extracted and the onnx version semmap was built
// with does not matter. The output parses to the model protobuf would build
// from the parsed source (its own fields in protobuf's order; the copied
// messages as the source wrote them).
//
// External data: references are kept unchanged, which is only correct when
// the output is in the source model's directory; elsewhere, a region that
// reads an external initializer is refused (FailedPrecondition, naming the
// tensor and the data file) rather than written with dangling paths.
//
// Errors (messages start with the file or module at fault); on error nothing
// is written:
//   NotFound           no module at `module_path` in the manifest; input
//                      missing; output directory missing
//   FailedPrecondition the module's subtree holds no node; its nodes live
//                      only inside If/Loop/Scan bodies; the region produces
//                      nothing read outside it; external data (above); the
//                      input is not the model the mapper was built on
//   InvalidArgument    output is the input (without allow_overwrite) or a
//                      directory; input not an ONNX model
//   PermissionDenied   output directory not writable
//   DataLoss           the input shrank while it was read
// The output is written atomically. Thread-safe: the mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_EXTRACT_H_
#define SEMMAP_INCLUDE_SEMMAP_EXTRACT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/mapper.h"
#include "semmap/metadata_keys.h"

namespace semmap {

struct SEMMAP_EXPORT ExtractOptions {
  // Allow `output` to be the input file itself or the manifest.
  bool allow_overwrite = false;
  // The manifest the mapper read, if any: protected like the input model.
  std::string manifest_path;
  // Every other file the command read (a reference, a profile, a rule
  // file): protected like the input.
  std::vector<std::string> protected_paths;
  // Inputs above this size are refused (InvalidArgument). The source is
  // read at the wire level over a memory map (no protobuf parse), so there
  // is no 2 GB limit; the default is GraphOptions'.
  std::uint64_t max_file_bytes = std::uint64_t{1} << 40;
  int max_subgraph_depth = 64;
};

struct SEMMAP_EXPORT ExtractResult {
  std::string module;               // the module path extracted
  std::size_t nodes = 0;            // nodes written (region + copied constants)
  std::size_t copied_constants = 0; // of those, Constant nodes from outside
  std::vector<std::string> inputs;  // graph inputs of the extracted model
  std::vector<std::string> outputs; // graph outputs of the extracted model
  std::vector<std::string> initializers;
  std::size_t untyped = 0;          // inputs and outputs without a type
  std::size_t external_tensors = 0; // initializers with external data
  std::uint64_t bytes_written = 0;
};

SEMMAP_EXPORT absl::StatusOr<ExtractResult> ExtractModule(const SemanticMapper& mapper,
                                                          const std::string& input,
                                                          const std::string& module_path,
                                                          const std::string& output,
                                                          const ExtractOptions& options = {});

// `semmap extract --module --json`: {"bytes", "copied_constants",
// "external_tensors", "initializers" (their number), "inputs", "model",
// "module", "nodes", "output", "outputs", "untyped"}, without a final
// newline. `model` and `output` are the paths as the caller names them.
SEMMAP_EXPORT std::string ExtractResultJson(const ExtractResult& result, const std::string& model,
                                            const std::string& output);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_EXTRACT_H_
