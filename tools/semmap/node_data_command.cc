// semmap node-data: Model Explorer node data (confidence or kernel time).
#include <iostream>
#include <optional>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "output_target.h"
#include "semmap/node_data.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kTool[] = "semmap node-data";

}  // namespace

namespace {

// The options of `semmap node-data`.
void AddNodeDataOptions(CommandLine& command_line) {
  command_line.Value("--value", "WHAT",
                     "confidence: mapping confidence 0..1: unmapped red,\n"
                     "< 0.5 orange, < 0.9 yellow, confident green (default);\n"
                     "time: kernel time per node (microseconds, all runs)\n"
                     "from --ort-profile, white to red (see semmap profile)");
  command_line.Input("--ort-profile", "PROFILE.json",
                     "the ONNX Runtime profile of MODEL.onnx (--value time)");
  command_line.Value("-o,--output", "OUT.json",
                     "the JSON file (written atomically; - for standard output)")
      ->required();
  command_line.Flag("--allow-overwrite",
                     "allow OUT to be an input file");
  command_line.Flag("--json",
                     "print the graph id and node count as JSON");
}

}  // namespace

int RunNodeDataCommand(int argc, char** argv) {
  CommandLine command_line(
      kTool,
      "semmap node-data MODEL.onnx [--manifest MANIFEST.json] -o OUT.json\n"
      "                        [--value confidence | --value time --ort-profile PROFILE.json]\n"
      "                        [--allow-overwrite] [--json]",
      "Writes node data for Google's Model Explorer (its \"node data\" overlay, the\n"
      "ModelNodeData JSON of model_explorer's node_data_builder): a value per node\n"
      "of MODEL.onnx's main graph, keyed as the ONNX adapter names nodes, with the\n"
      "colours to paint them. Load it next to MODEL.onnx in Model Explorer\n"
      "(model-explorer MODEL.onnx --node_data_paths=OUT.json, or the UI).\n",
      "Exit codes: 0 ok, 2 bad usage or input, a profile naming none of MODEL.onnx's\n"
      "nodes, or OUT not writable.\n");
  AddNodeDataOptions(command_line);
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  const std::string* output = args->option("--output");
  semmap::NodeDataOptions options;
  if (absl::Status target = CheckStandardOutputTarget(*output); !target.ok()) {
    return Fail(kTool, target);
  }
  const std::string* value = args->option("--value");
  const std::string* profile_path = args->option("--ort-profile");
  if (value == nullptr || *value == "confidence") {
    options.value = semmap::NodeDataValue::kConfidence;
  } else if (*value == "time") {
    options.value = semmap::NodeDataValue::kTime;
  } else {
    return command_line.UsageError(
        absl::StrCat("--value is confidence or time, got \"", *value, "\""));
  }
  const bool time = options.value == semmap::NodeDataValue::kTime;
  if (time != (profile_path != nullptr)) {
    std::cerr << kTool << ": "
              << (time ? "--value time needs --ort-profile PROFILE.json"
                       : "--ort-profile goes with --value time")
              << "\n" << command_line.Help();
    return kExitBadInput;
  }
  const std::string& input = args->positional[0];
  options.allow_overwrite = args->has("--allow-overwrite");
  options.protected_paths = args->inputs;
  auto loaded = LoadProfiledWithProgress(RequestOf(*args, input), profile_path);
  if (!loaded.ok()) return Fail(kTool, loaded.status());
  const semmap::SemanticMapper& mapper = *loaded->model->mapper;
  if (loaded->attribution) {
    std::int64_t found_calls = 0;
    for (std::int64_t c : loaded->attribution->node_calls) found_calls += c;
    if (found_calls == 0) {
      return Fail(kTool, absl::InvalidArgumentError(
                             *profile_path + ": names none of the nodes of " + input +
                             " (semmap profile says why)"));
    }
  }
  auto result = semmap::WriteModelExplorerNodeData(mapper, loaded->attributionOrNull(), OutputPath(*output),
                                                   options);
  if (!result.ok()) return Fail(kTool, result.status());
  if (args->has("--json")) {
    SummaryStream(*output) << semmap::NodeDataResultJson(*result, options, input, *output)
                           << "\n";
  } else {
    SummaryStream(*output) << *output << ": Model Explorer node data, " << (time ? "kernel time" : "confidence")
              << " of " << result->results << " nodes of graph \""
              << EscapeControls(result->graph_id) << "\"\n";
  }
  return kExitOk;
}

}  // namespace semmap_cli
