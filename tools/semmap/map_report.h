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
#include "nlohmann/json.hpp"
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

// Loads and maps; errors name the file at fault. With `reference_path`, the
// unprocessed export the model was made from is loaded too and its mapping
// carried over (MapperOptions::reference); a reference that is not that
// export is InvalidArgument naming both files and the evidence.
// A manifest that does not fit the model (SemanticMapper::manifestFit) is
// FailedPrecondition naming both files and the evidence, unless
// `allow_manifest_mismatch`.
absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& model_path,
                                                      const std::string* manifest_path,
                                                      const std::string* reference_path = nullptr,
                                                      bool allow_manifest_mismatch = false);

// The --allow-manifest-mismatch option as every mapping command describes it.
inline constexpr char kAllowMismatchHelp[] =
    "map even when the manifest does not fit the model\n"
    "(by default that is refused with exit 2: its answers\n"
    "would look complete and be wrong)";

// The --reference option as every mapping command describes it.
inline constexpr char kReferenceHelp[] =
    "the unprocessed export MODEL.onnx was made from\n"
    "(before onnxslim, ONNX Runtime optimization,\n"
    "quantization or name stripping): its mapping is\n"
    "carried over node by node; refused (exit 2) when\n"
    "it is not that export";

// Appends {"node", "name", "op_type", "domain", "module", "class",
// "qualified_class", "confidence", "strategy", "evidence"} as DumpJson
// writes it nested `indent` spaces deep (JsonObjectText).
void AppendMappingJson(const semmap::Graph& graph, semmap::NodeId id, const semmap::Mapping& m,
                       int indent, std::string* out);

// The aligned "node: ... evidence: ..." block.
void PrintMapping(std::ostream& out, const semmap::Graph& graph, semmap::NodeId id,
                  const semmap::Mapping& m);

// Model, manifest, root binding, coverage, strategies and the module tree to
// `max_depth` (0 = no tree); or the same as JSON.
void PrintSummary(std::ostream& out, const LoadedModel& model, int max_depth, bool json);

using ModelLoader = std::function<absl::StatusOr<std::unique_ptr<LoadedModel>>(
    const std::string& model_path, const std::string* manifest_path,
    const std::string* reference_path, bool allow_manifest_mismatch)>;

// The whole `semmap-query` / `semmap map` command: parses argv (argv[0] is
// the command name), loads with `load`, prints, returns the exit code.
// `tool` names the command in usage and errors.
// A manifest that fits with notes: what did not resolve literally, and why,
// one line per kind on stderr (text output; JSON has them in manifest_fit).
void PrintFitNotes(const LoadedModel& loaded);

int RunMap(const std::string& tool, int argc, char** argv, const ModelLoader& load = LoadModel);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_MAP_REPORT_H_
