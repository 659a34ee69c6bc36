// Stages: a model split into consecutive parts at module boundaries, each a
// standalone ONNX model, for pipelines across devices or processes.
//
//   semmap::StageOptions options;
//   options.stages = 3;  // balanced by node count
//   absl::StatusOr<semmap::StagesResult> r =
//       semmap::SplitStages(*mapper, "model.onnx", "out/model.onnx", options);
//   // writes out/model.stage0.onnx, out/model.stage1.onnx, out/model.stage2.onnx
//
// The main graph's nodes are taken in file order (topological, as ONNX
// requires) and cut into consecutive runs. A cut may fall only between
// *units*: each item of a layer container (SemanticQuery::layerContainers:
// "bert.encoder.layer.0", "model.layers.5") and every module that is not a
// layer container or one of their ancestors ("bert.embeddings",
// "bert.pooler", "lm_head") is kept whole, so no stage holds part of a
// layer. Nodes mapped to the ancestors themselves (mask and position
// arithmetic of "bert") and unmapped nodes go where their position puts
// them. Without a layer container the units are the root's children.
//
// Where: `stages` = N places N-1 cuts, each at the allowed cut whose share of
// the weight before it is closest to k/N: weight is one per node, or the
// node's kernel time when `profile` is given (time-balanced stages).
// Alternatively `boundaries` names modules each of which starts a stage: the
// cut is at its first node, which must be an allowed cut.
//
// Each stage model holds its nodes (If/Loop/Scan whole), the Constant nodes
// they read (copied into every stage that reads them, never passed between
// stages) and the initializers they read; opsets, functions, ir_version and
// producer of the source; metadata_props kStageKey ("K of N") and
// kStageUnitsKey (first and last unit). Its inputs are the values it
// reads that an earlier stage produced or that are model inputs; its
// outputs are the values it produces that a later stage reads, and the
// model outputs it produces. So the stages chain: run them in order, each
// fed by name from the model's inputs and the earlier stages' outputs, and
// the model's outputs are among the stages' outputs. (A value read several
// stages later, such as an attention mask, is an output of the stage that
// made it and an input of each stage that reads it, not passed through the
// stages between: ONNX Runtime 1.23 returns wrong values for graph outputs
// that are also graph inputs.) Types come from the source model where it
// states them (StageInfo::untyped counts the others: run onnx shape
// inference on the source first, as for ExtractModule).
//
// Output files: `output` with ".stageK" inserted before its extension
// ("out/model.onnx" -> "out/model.stage0.onnx"), written atomically; all
// are checked before any is written.
//
// Errors (messages name the file or module at fault); on error nothing is
// written:
//   InvalidArgument    stages < 1 or both stages and boundaries set; a
//                      boundary that is not a module; an output that is the
//                      input or manifest (without allow_overwrite); input
//                      not an ONNX model
//   FailedPrecondition fewer allowed cuts than stages - 1; a boundary module
//                      with no top-level node, or whose first node is not
//                      an allowed cut, or boundaries out of order; the
//                      input is not the model the mapper was built on;
//                      external data and an output in another directory
//   NotFound           input or output directory missing
// Thread-safe: the mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_STAGES_H_
#define SEMMAP_INCLUDE_SEMMAP_STAGES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/mapper.h"
#include "semmap/metadata_keys.h"
#include "semmap/profile.h"

namespace semmap {

struct SEMMAP_EXPORT StageOptions {
  int stages = 0;                       // N balanced stages, or 0
  std::vector<std::string> boundaries;  // modules starting stages 2.., or empty
  // Balance by kernel time instead of node count; an attribution of this
  // mapper's graph.
  const ProfileAttribution* profile = nullptr;
  bool allow_overwrite = false;
  std::string manifest_path;  // protected like the input
  // Every other file the command read (a reference, a profile, a rule
  // file): protected like the input.
  std::vector<std::string> protected_paths;
  std::uint64_t max_file_bytes = std::uint64_t{2} << 30;
  int max_subgraph_depth = 64;
};

struct SEMMAP_EXPORT StageInfo {
  std::string path;                 // the file written
  std::string first_unit, last_unit;  // module paths ("" for none)
  std::size_t nodes = 0;            // nodes written, copied constants included
  std::size_t copied_constants = 0;
  std::int64_t weight = 0;          // nodes, or microseconds with a profile
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::size_t initializers = 0;
  std::size_t untyped = 0;          // inputs and outputs without a type
  std::uint64_t bytes = 0;
};

struct SEMMAP_EXPORT StagesResult {
  std::vector<StageInfo> stages;
  std::size_t allowed_cuts = 0;  // positions a cut could take
  bool by_time = false;
};

SEMMAP_EXPORT absl::StatusOr<StagesResult> SplitStages(const SemanticMapper& mapper,
                                                       const std::string& input,
                                                       const std::string& output,
                                                       const StageOptions& options);

// `output` with ".stage<index>" before its extension.
SEMMAP_EXPORT std::string StagePath(const std::string& output, std::size_t index);

// `semmap extract --stages --json`: {"allowed_cuts", "balance" ("time_us"
// or "nodes"), "model", "stages" (each {"bytes", "copied_constants",
// "first_unit", "initializers", "inputs", "last_unit", "nodes", "outputs",
// "path", "untyped", "weight"})}, without a final newline.
SEMMAP_EXPORT std::string StagesResultJson(const StagesResult& result, const std::string& model);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_STAGES_H_
