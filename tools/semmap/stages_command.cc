// semmap extract --stages N | --boundaries A,B: the model split into
// consecutive stages at module boundaries.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli_util.h"
#include "commands.h"
#include "output_target.h"
#include "progress.h"
#include "semmap/semmap.h"

namespace semmap_cli {

int RunExtractStages(const CommandLine& command_line, const Args& args) {
  const char* tool = command_line.tool().c_str();
  semmap::StageOptions options;
  const std::string* stages = args.option("--stages");
  const std::string* boundaries = args.option("--boundaries");
  const std::string* output = args.option("--output");
  if (IsStandardOutput(*output)) {
    return command_line.UsageError(
        "-o - (standard output) cannot take stages: each is a file of its own (OUT.stage0.onnx, "
        "OUT.stage1.onnx, ...); give OUT as a file name");
  }
  if (stages != nullptr &&
      (!absl::SimpleAtoi(*stages, &options.stages) || options.stages < 1 ||
       options.stages > 100000)) {
    return command_line.UsageError(
        absl::StrCat("--stages needs an integer from 1 to 100000, got \"", *stages, "\""));
  }
  if (boundaries != nullptr) {
    options.boundaries = absl::StrSplit(*boundaries, ',');
  }
  const std::string* profile_path = args.option("--ort-profile");
  const std::string& input = args.positional[0];
  options.allow_overwrite = args.has("--allow-overwrite");
  options.protected_paths = args.inputs;
  if (const std::string* m = args.option("--manifest")) options.manifest_path = *m;
  auto loaded = LoadProfiledWithProgress(RequestOf(args, input), profile_path);
  if (!loaded.ok()) return Fail(tool, loaded.status());
  const semmap::SemanticMapper& mapper = *loaded->model->mapper;
  options.profile = loaded->attributionOrNull();
  absl::StatusOr<semmap::StagesResult> result;
  {
    Progress progress("writing stages of " + input);
    result = semmap::SplitStages(mapper, input, *output, options);
  }
  if (!result.ok()) {
    const bool unknown = result.status().code() == absl::StatusCode::kInvalidArgument &&
                         absl::string_view(result.status().message()).find("no such module") !=
                             absl::string_view::npos;
    return Fail(tool, result.status(), unknown ? kExitNotFound : kExitBadInput);
  }
  std::size_t untyped = 0;
  for (const semmap::StageInfo& s : result->stages) untyped += s.untyped;
  if (untyped > 0) {
    std::cerr << tool << ": note: " << untyped << " stage inputs/outputs have no type in "
              << input << "; run onnx shape inference on it first for runnable stages\n";
  }
  if (args.has("--json")) {
    std::cout << semmap::StagesResultJson(*result, input) << "\n";
    return kExitOk;
  }
  for (const semmap::StageInfo& s : result->stages) {
    std::cout << s.path << ": " << EscapeControls(s.first_unit.empty() ? "-" : s.first_unit)
              << " .. " << EscapeControls(s.last_unit.empty() ? "-" : s.last_unit) << ", "
              << s.nodes << " nodes (" << s.copied_constants << " constants copied), ";
    if (result->by_time) std::cout << "kernel time " << s.weight << " us, ";
    std::cout << s.inputs.size() << " inputs, " << s.outputs.size() << " outputs\n";
  }
  return kExitOk;
}

}  // namespace semmap_cli
