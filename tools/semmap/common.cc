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

}  // namespace

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadWithProgress(const std::string& model_path,
                                                             const std::string* manifest_path,
                                                             const std::string* reference_path,
                                                             bool allow_manifest_mismatch) {
  if (reference_path == nullptr && ParsedReference()) reference_path = &*ParsedReference();
  Progress progress("loading and mapping " + model_path);
  return LoadModel(model_path, manifest_path, reference_path,
                   allow_manifest_mismatch || ParsedAllowMismatch());
}

std::optional<Args> ParseCommandArgs(const std::string& tool, const std::string& usage,
                                     int argc, char** argv, std::set<std::string> value_options,
                                     std::set<std::string> flag_options, int* exit_code) {
  flag_options.insert({"--help", "-h", "--allow-manifest-mismatch"});
  value_options.insert("--reference");
  const std::string full_usage = usage + "Every command that maps MODEL.onnx also takes\n" +
                                 kReferenceHelp + kAllowMismatchHelp;
  auto args = ParseArgs(argc, argv, value_options, flag_options);
  if (!args.ok()) {
    std::cerr << tool << ": " << EscapeControls(args.status().message()) << "\n" << full_usage;
    *exit_code = kExitBadInput;
    return std::nullopt;
  }
  if (args->has("--help") || args->has("-h")) {
    std::cout << full_usage;
    *exit_code = kExitOk;
    return std::nullopt;
  }
  if (args->positional.size() != 1) {
    std::cerr << tool << ": expected exactly one MODEL.onnx\n" << full_usage;
    *exit_code = kExitBadInput;
    return std::nullopt;
  }
  if (const std::string* reference = args->option("--reference")) ParsedReference() = *reference;
  ParsedAllowMismatch() = args->has("--allow-manifest-mismatch");
  return *std::move(args);
}

}  // namespace semmap_cli
