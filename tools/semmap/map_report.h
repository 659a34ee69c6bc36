// What `semmap-query` and `semmap map` print: one node's mapping, or a
// summary of the whole model (counts, strategies, module tree).
#ifndef SEMMAP_TOOLS_SEMMAP_MAP_REPORT_H_
#define SEMMAP_TOOLS_SEMMAP_MAP_REPORT_H_

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "semmap/semmap.h"

namespace semmap_cli {

// A model, its optional manifest and the mapper over both, with the paths
// they came from (the mapper owns what it maps with; graph and manifest
// share its copies).
struct LoadedModel {
  std::string model_path;
  std::optional<std::string> manifest_path;
  std::optional<std::string> reference_path;  // --reference, read while mapping
  std::optional<semmap::Graph> graph;
  std::shared_ptr<const semmap::Manifest> manifest;  // null without one
  std::optional<semmap::SemanticMapper> mapper;
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

// The aligned "node: ... evidence: ..." block, and "origins:" for a node
// doing several modules' work.
void PrintMapping(std::ostream& out, const semmap::SemanticMapper& mapper, semmap::NodeId id);

// Model, manifest, root binding, coverage, strategies and the module tree to
// `max_depth` (0 = no tree); or the same as JSON.
void PrintSummary(std::ostream& out, const LoadedModel& model, int max_depth, bool json);

using ModelLoader =
    std::function<absl::StatusOr<std::unique_ptr<LoadedModel>>(const LoadRequest& request)>;

// The whole `semmap-query` / `semmap map` command: parses argv (argv[0] is
// the command name), loads with `load`, prints, returns the exit code.
// `tool` names the command in usage and errors.
// A manifest that fits with notes: what did not resolve literally, and why,
// one line per kind on stderr (text output; JSON has them in manifest_fit);
// and a reference that is not the model's source: one warning per finding
// (JSON: reference_check).
void PrintFitNotes(const LoadedModel& loaded);

int RunMap(const std::string& tool, int argc, char** argv, const ModelLoader& load = LoadModel);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_MAP_REPORT_H_
