// Embed: write a copy of an ONNX model that carries its own provenance
// record (provenance.h, docs/record.md), so that any processed copy of it
// (onnxslim, ONNX Runtime's optimizers and quantizers, fp16 conversion,
// name stripping) maps with no file but itself.
//
//   // The plain export, mapped with its manifest: the record describes it.
//   absl::StatusOr<semmap::SemanticMapper> mapper =
//       semmap::SemanticMapper::Open("model.onnx", "manifest.json");
//   semmap::EmbedOptions options;
//   options.manifest_path = "manifest.json";
//   absl::StatusOr<semmap::EmbedResult> r = semmap::Embed(
//       *mapper, "model.onnx", "model.onnx", "model.semmap.onnx", options);
//
// The record holds the source's manifest, a weightless copy of the
// source's graph (names, op types, values, initializer names and shapes:
// no weights) and the source's mapping. It is written as one model-level
// metadata_props entry (kRecordKey), replacing a record the target already
// carries; every other byte of the target is copied as it is (the model is
// edited at the wire level, tensor payloads are never decoded, external
// data references are unchanged). A record costs about a tenth of the
// graph's weightless size (docs/record.md has measured figures).
//
// The source is usually the target itself: embed right after exporting.
// It can also be the export a target was made from (a published
// `model_quantized.onnx` and its `model.onnx`): the target is then checked
// to be a processed copy of the source, as `--reference` checks it.
//
// Output is written atomically; the inputs are protected as Annotate's are.
// Errors (messages start with the file at fault):
//   FailedPrecondition  the source mapper has no manifest; the source file
//                       is not the graph the mapper mapped (changed since);
//                       the manifest file no longer lists the mapper's
//                       modules; the target is not a processed copy of the
//                       source (the reference check's finding)
//   InvalidArgument     output is an input and allow_overwrite is false;
//                       a file is not an ONNX model; above a limit
//   NotFound, PermissionDenied, ResourceExhausted, DataLoss as Annotate's
// On error nothing is written.
#ifndef SEMMAP_INCLUDE_SEMMAP_EMBED_H_
#define SEMMAP_INCLUDE_SEMMAP_EMBED_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "semmap/export.h"
#include "semmap/mapper.h"

namespace semmap {

struct SEMMAP_EXPORT EmbedOptions {
  // The manifest file the source mapper read; its text goes into the
  // record. Empty when the mapper's manifest came from the source's own
  // record (it is then copied from there).
  std::string manifest_path;
  // Allow `output` to be an input file (embed in place).
  bool allow_overwrite = false;
  // Every other file the command read: protected like the inputs.
  std::vector<std::string> protected_paths;
  std::uint64_t max_file_bytes = std::uint64_t{1} << 40;
  int max_subgraph_depth = 64;
};

struct SEMMAP_EXPORT EmbedResult {
  std::size_t nodes = 0;               // of the source graph
  std::uint64_t record_bytes = 0;      // the metadata value as written
  std::uint64_t graph_bytes = 0;       // the weightless copy, before compression
  std::uint64_t manifest_bytes = 0;    // the manifest text, before compression
  std::uint64_t bytes_written = 0;     // the output file
  std::size_t replaced = 0;            // records the target carried before
  std::string fingerprint;             // of the source graph, 16 hex digits
};

SEMMAP_EXPORT absl::StatusOr<EmbedResult> Embed(const SemanticMapper& source,
                                                const std::string& source_path,
                                                const std::string& target_path,
                                                const std::string& output,
                                                const EmbedOptions& options = {});

// `semmap embed --json`: {"bytes", "fingerprint", "graph_bytes",
// "manifest_bytes", "model", "nodes", "output", "record_bytes",
// "replaced"}, without a final newline.
SEMMAP_EXPORT std::string EmbedResultJson(const EmbedResult& result, const std::string& model,
                                          const std::string& output);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_EMBED_H_
