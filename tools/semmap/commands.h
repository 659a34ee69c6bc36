// The subcommands of the `semmap` tool. Each takes argv with its own name
// in argv[0] and returns the process exit code (cli_util.h).
#ifndef SEMMAP_TOOLS_SEMMAP_COMMANDS_H_
#define SEMMAP_TOOLS_SEMMAP_COMMANDS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cli_util.h"
#include "map_report.h"
#include "profiled_model.h"

namespace semmap_cli {

int RunQueryCommand(int argc, char** argv);
int RunTreeCommand(int argc, char** argv);
int RunAnnotateCommand(int argc, char** argv);
int RunSidecarCommand(int argc, char** argv);
int RunDiffCommand(int argc, char** argv);
int RunExtractCommand(int argc, char** argv);
int RunReportCommand(int argc, char** argv);
int RunProfileCommand(int argc, char** argv);
int RunGraphmlCommand(int argc, char** argv);
int RunNodeDataCommand(int argc, char** argv);
// semmap extract --stages / --boundaries, after extract parsed `args`.
int RunExtractStages(const CommandLine& command_line, const Args& args);

// LoadModel() with a progress indicator on a terminal. Without
// `reference_path`, the --reference that ParseCommandArgs parsed (if any)
// applies: every single-model command takes it without handling it.
// The same holds for --allow-manifest-mismatch.
absl::StatusOr<std::unique_ptr<LoadedModel>> LoadWithProgress(
    const std::string& model_path, const std::string* manifest_path,
    const std::string* reference_path = nullptr, bool allow_manifest_mismatch = false);

// LoadProfiledModel() with LoadWithProgress() as the loader.
absl::StatusOr<ProfiledModel> LoadProfiledWithProgress(const std::string& model_path,
                                                       const std::string* manifest_path,
                                                       const std::string* profile_path);

// Adds the options every single-model command takes: --manifest (unless
// `manifest` is false), --reference ORIGINAL.onnx and
// --allow-manifest-mismatch (kept for LoadWithProgress), with exactly one
// MODEL.onnx; then parses argv (CommandLine::Parse).
std::optional<Args> ParseCommandArgs(CommandLine& command_line, int argc, char** argv,
                                     int* exit_code, bool manifest = true);

// The --manifest option as the commands describe it.
CLI::Option* AddManifestOption(CommandLine& command_line);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_COMMANDS_H_
