// The subcommands of the `semmap` tool. Each takes argv with its own name
// in argv[0] and returns the process exit code (cli_util.h).
#ifndef SEMMAP_TOOLS_SEMMAP_COMMANDS_H_
#define SEMMAP_TOOLS_SEMMAP_COMMANDS_H_

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "cli_util.h"
#include "map_report.h"

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
int RunExtractStages(const char* tool, const char* usage, const Args& args);

// LoadModel() with a progress indicator on a terminal. Without
// `reference_path`, the --reference that ParseCommandArgs parsed (if any)
// applies: every single-model command takes it without handling it.
// The same holds for --allow-manifest-mismatch.
absl::StatusOr<std::unique_ptr<LoadedModel>> LoadWithProgress(
    const std::string& model_path, const std::string* manifest_path,
    const std::string* reference_path = nullptr, bool allow_manifest_mismatch = false);

// Parses argv for a subcommand that takes exactly one MODEL.onnx; --help,
// -h, --reference ORIGINAL.onnx and --allow-manifest-mismatch (kept for
// LoadWithProgress, described after the command's usage) are added. Returns nullopt after printing
// usage (--help: stdout, exit 0; bad usage: stderr, exit 2) with the exit
// code in *exit_code.
std::optional<Args> ParseCommandArgs(const std::string& tool, const std::string& usage,
                                      int argc, char** argv,
                                      std::set<std::string> value_options,
                                      std::set<std::string> flag_options, int* exit_code);

}  // namespace semmap_cli

#endif  // SEMMAP_TOOLS_SEMMAP_COMMANDS_H_
