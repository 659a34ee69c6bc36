// Pieces every subcommand uses: argument handling and loading.
#include <iostream>

#include "commands.h"
#include "progress.h"

namespace semmap_cli {

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadWithProgress(const std::string& model_path,
                                                             const std::string* manifest_path) {
  Progress progress("loading and mapping " + model_path);
  return LoadModel(model_path, manifest_path);
}

std::optional<Args> ParseCommandArgs(const std::string& tool, const std::string& usage,
                                     int argc, char** argv, std::set<std::string> value_options,
                                     std::set<std::string> flag_options, int* exit_code) {
  flag_options.insert({"--help", "-h"});
  auto args = ParseArgs(argc, argv, value_options, flag_options);
  if (!args.ok()) {
    std::cerr << tool << ": " << args.status().message() << "\n" << usage;
    *exit_code = kExitBadInput;
    return std::nullopt;
  }
  if (args->has("--help") || args->has("-h")) {
    std::cout << usage;
    *exit_code = kExitOk;
    return std::nullopt;
  }
  if (args->positional.size() != 1) {
    std::cerr << tool << ": expected exactly one MODEL.onnx\n" << usage;
    *exit_code = kExitBadInput;
    return std::nullopt;
  }
  return *std::move(args);
}

}  // namespace semmap_cli
