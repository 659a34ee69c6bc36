// Pieces every subcommand uses: argument handling and loading.
#include <optional>
#include <string>

#include "commands.h"
#include "progress.h"

namespace semmap_cli {

LoadRequest RequestOf(const Args& args, const std::string& model_path) {
  LoadRequest request;
  request.model_path = model_path;
  request.manifest_path = args.option("--manifest");
  request.reference_path = args.option("--reference");
  request.allow_manifest_mismatch = args.has("--allow-manifest-mismatch");
  request.use_record = !args.has("--no-record");
  request.notes_on_stderr = !args.has("--json");
  return request;
}

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadWithProgress(const LoadRequest& request) {
  absl::StatusOr<std::unique_ptr<LoadedModel>> loaded;
  {
    Progress progress("loading and mapping " + request.model_path);
    loaded = LoadModel(request);
  }
  if (loaded.ok() && request.notes_on_stderr) PrintFitNotes(**loaded);
  return loaded;
}

absl::StatusOr<ProfiledModel> LoadProfiledWithProgress(const LoadRequest& request,
                                                       const std::string* profile_path) {
  return LoadProfiledModel(request, profile_path,
                           [](const LoadRequest& r) { return LoadWithProgress(r); });
}

CLI::Option* AddManifestOption(CommandLine& command_line) {
  return command_line.Input("--manifest", "MANIFEST.json",
                            "the module manifest of the model (python -m semmap.manifest);\n"
                            "without it, modules come from node names and metadata alone");
}

std::optional<Args> ParseCommandArgs(CommandLine& command_line, int argc, char** argv,
                                     int* exit_code, bool manifest) {
  if (manifest) AddManifestOption(command_line);
  command_line.Input("--reference", "ORIGINAL.onnx", kReferenceHelp);
  command_line.Flag("--no-record", kNoRecordHelp);
  command_line.Flag("--allow-manifest-mismatch", kAllowMismatchHelp);
  command_line.Positionals(1, 1, "expected exactly one MODEL.onnx");
  std::optional<Args> args = command_line.Parse(argc, argv, exit_code);
  return args;
}

}  // namespace semmap_cli
