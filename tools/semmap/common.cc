// Pieces every subcommand uses: argument handling and loading.
#include <iostream>
#include <optional>
#include <string>

#include "commands.h"
#include "progress.h"

namespace semmap_cli {
namespace {

// The --reference of this command line: one command runs per process.
std::optional<std::string>& ParsedReference() {
  static std::optional<std::string> reference;
  return reference;
}

bool& ParsedAllowMismatch() {
  static bool allow = false;
  return allow;
}

// Whether the fit's notes go to stderr: text output of a command that
// parsed its arguments with ParseCommandArgs (semmap map prints its own).
bool& NotesOnStderr() {
  static bool notes = false;
  return notes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadWithProgress(const std::string& model_path,
                                                             const std::string* manifest_path,
                                                             const std::string* reference_path,
                                                             bool allow_manifest_mismatch) {
  if (reference_path == nullptr && ParsedReference()) reference_path = &*ParsedReference();
  absl::StatusOr<std::unique_ptr<LoadedModel>> loaded;
  {
    Progress progress("loading and mapping " + model_path);
    loaded = LoadModel(model_path, manifest_path, reference_path,
                       allow_manifest_mismatch || ParsedAllowMismatch());
  }
  if (loaded.ok() && NotesOnStderr()) PrintFitNotes(**loaded);
  return loaded;
}

absl::StatusOr<ProfiledModel> LoadProfiledWithProgress(const std::string& model_path,
                                                       const std::string* manifest_path,
                                                       const std::string* profile_path) {
  return LoadProfiledModel(
      model_path, manifest_path, profile_path,
      [](const std::string& model, const std::string* manifest, const std::string* reference,
         bool allow_mismatch) {
        return LoadWithProgress(model, manifest, reference, allow_mismatch);
      });
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
  command_line.Flag("--allow-manifest-mismatch", kAllowMismatchHelp);
  command_line.Positionals(1, 1, "expected exactly one MODEL.onnx");
  std::optional<Args> args = command_line.Parse(argc, argv, exit_code);
  if (!args) return std::nullopt;
  if (const std::string* reference = args->option("--reference")) ParsedReference() = *reference;
  ParsedAllowMismatch() = args->has("--allow-manifest-mismatch");
  NotesOnStderr() = !args->has("--json");
  return args;
}

}  // namespace semmap_cli
