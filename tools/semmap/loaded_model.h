// The tools' one load path: a model, its optional manifest and reference,
// loaded and mapped with SemanticMapper::Open, and the options every mapping
// command shares.
#ifndef SEMMAP_TOOLS_SEMMAP_LOADED_MODEL_H_
#define SEMMAP_TOOLS_SEMMAP_LOADED_MODEL_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "semmap/semmap.h"

namespace semmap_cli {

// A model mapped for a command, with the paths its command line named. The
// mapper owns the graph and the manifest it mapped with: they are read
// through it, never copied.
struct LoadedModel {
  std::string model_path;
  std::optional<std::string> manifest_path;
  std::optional<std::string> reference_path;  // --reference, read while mapping
  std::optional<semmap::SemanticMapper> mapper;  // set once loaded

  const semmap::Graph& graph() const { return mapper->graph(); }
};

// What a command loads: the model, and the files and flags its command
// line named (null: none).
struct LoadRequest {
  std::string model_path;
  const std::string* manifest_path = nullptr;
  const std::string* reference_path = nullptr;  // --reference
  bool allow_manifest_mismatch = false;         // --allow-manifest-mismatch
  bool use_record = true;                       // not --no-record
  // Print the fit's notes on stderr once loaded (text output; LoadModel
  // leaves that to its caller).
  bool notes_on_stderr = false;
};

// Loads and maps with SemanticMapper::Open, whose errors name the file at
// fault; a misfit's message adds how to map anyway.
absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const LoadRequest& request);

// The --allow-manifest-mismatch option as every mapping command describes it.
inline constexpr char kAllowMismatchHelp[] =
    "map even when the manifest does not fit the model\n"
    "(by default that is refused with exit 2: its answers\n"
    "would look complete and be wrong)";

// The --no-record option as every mapping command describes it.
inline constexpr char kNoRecordHelp[] =
    "map as if MODEL.onnx carried no provenance record\n"
    "(semmap embed); by default a record is used when no\n"
    "--manifest or --reference is named";

// The --reference option as every mapping command describes it.
inline constexpr char kReferenceHelp[] =
    "the unprocessed export MODEL.onnx was made from\n"
    "(before onnxslim, ONNX Runtime optimization,\n"
    "quantization or name stripping): its mapping is\n"
    "carried over node by node; refused (exit 2) when\n"
    "it is another model, a warning when it is another\n"
    "file of this one (the model itself is not used)";

using ModelLoader =
    std::function<absl::StatusOr<std::unique_ptr<LoadedModel>>(const LoadRequest& request)>;

// A manifest that fits with notes: what did not resolve literally, and why,
// one line per kind on stderr (text output; JSON has them in manifest_fit);
// and a reference that is not the model's source: one warning per finding
// (JSON: reference_check).
void PrintFitNotes(const LoadedModel& loaded);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_LOADED_MODEL_H_
