// The subcommands of the `semmap` tool. Each takes argv with its own name
// in argv[0] and returns the process exit code (cli_util.h).
#ifndef SEMMAP_TOOLS_SEMMAP_COMMANDS_H_
#define SEMMAP_TOOLS_SEMMAP_COMMANDS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "cli_util.h"
#include "loaded_model.h"
#include "profiled_model.h"

namespace semmap_cli {

int RunQueryCommand(int argc, char** argv);
int RunTreeCommand(int argc, char** argv);
int RunAnnotateCommand(int argc, char** argv);
int RunEmbedCommand(int argc, char** argv);
int RunSidecarCommand(int argc, char** argv);
int RunDiffCommand(int argc, char** argv);
int RunExtractCommand(int argc, char** argv);
int RunReportCommand(int argc, char** argv);
int RunProfileCommand(int argc, char** argv);
int RunGraphmlCommand(int argc, char** argv);
int RunNodeDataCommand(int argc, char** argv);
// semmap extract --stages / --boundaries, after extract parsed `args`.
int RunExtractStages(const CommandLine& command_line, const Args& args);

// What a command parsed by ParseCommandArgs loads: `model_path` with its
// --manifest, --reference and --allow-manifest-mismatch; the fit's notes on
// stderr unless --json.
LoadRequest RequestOf(const Args& args, const std::string& model_path);

// LoadModel() with a progress indicator on a terminal, then the fit's
// notes when the request asks for them.
absl::StatusOr<std::unique_ptr<LoadedModel>> LoadWithProgress(const LoadRequest& request);

// LoadProfiledModel() with LoadWithProgress() as the loader.
absl::StatusOr<ProfiledModel> LoadProfiledWithProgress(const LoadRequest& request,
                                                       const std::string* profile_path);

// Adds the options every single-model command takes: --manifest (unless
// `manifest` is false), --reference ORIGINAL.onnx and
// --allow-manifest-mismatch (read by RequestOf), with exactly one
// MODEL.onnx; then parses argv (CommandLine::Parse).
std::optional<Args> ParseCommandArgs(CommandLine& command_line, int argc, char** argv,
                                     int* exit_code, bool manifest = true);

// The --manifest option as the commands describe it.
CLI::Option* AddManifestOption(CommandLine& command_line);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_COMMANDS_H_
