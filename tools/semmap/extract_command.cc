// semmap extract: one module's nodes as a standalone ONNX model.
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "commands.h"
#include "output_target.h"
#include "progress.h"
#include "semmap/extract.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kTool[] = "semmap extract";


// What `semmap extract --module` wrote, as text or JSON.
void PrintExtracted(const semmap::ExtractResult& r, const std::string& input,
                    const std::string& output, bool json) {
  if (r.untyped > 0) {
    std::cerr << kTool << ": note: " << r.untyped
              << " inputs/outputs have no type in " << input
              << "; run onnx shape inference on it first for a runnable model\n";
  }
  if (json) {
    SummaryStream(output) << semmap::ExtractResultJson(r, input, output) << "\n";
  } else {
    SummaryStream(output) << output << ": " << (r.module.empty() ? "<root>" : r.module) << ", "
                          << r.nodes << " nodes (" << r.copied_constants
                          << " constants copied), " << r.inputs.size() << " inputs, "
                          << r.outputs.size() << " outputs, " << r.initializers.size()
                          << " initializers\n";
  }
}

}  // namespace

int RunExtractCommand(int argc, char** argv) {
  CommandLine command_line(
      kTool,
      "semmap extract MODEL.onnx [--manifest MANIFEST.json] --module PATH -o OUT.onnx\n"
      "                      [--allow-overwrite] [--json]\n"
      "       semmap extract MODEL.onnx [--manifest MANIFEST.json] -o OUT.onnx\n"
      "                      (--stages N [--ort-profile PROFILE.json] | --boundaries A,B,...)",
      "Writes the top-level nodes mapped into the subtree of module PATH as a\n"
      "standalone model: its inputs are the values flowing into the region, its\n"
      "outputs the values leaving it; initializers, opsets and known types are\n"
      "copied, Constant nodes feeding the region come along, unmapped nodes never\n"
      "do. Boundary values the source does not type stay untyped: run onnx shape\n"
      "inference on MODEL.onnx first to get a model runtimes accept\n"
      "(share/doc/semmap/report.md).\n",
      "Exit codes: 0 ok, 1 no such module, 2 bad usage or input, a module without\n"
      "top-level nodes, external data outside OUT's directory, more stages than cuts\n"
      "or a boundary that would split a layer; nothing is written on error.\n");
  CLI::Option* module_option = command_line.Value("--module", "PATH", "the module (\"\" is the root)");
  CLI::Option* stages_option = command_line.Value(
      "--stages", "N",
      "instead of one module, split the model into N consecutive\n"
      "stages OUT.stage0.onnx.. at module boundaries (no layer or\n"
      "module split), balanced by node count; each stage's inputs\n"
      "are model inputs or earlier stages' outputs");
  CLI::Option* boundaries_option = command_line.Value(
      "--boundaries", "A,B", "stages starting at modules A, B, ... (in model order)");
  command_line.ExactlyOne("WHAT (exactly one)", {module_option, stages_option, boundaries_option},
                          "give one of --module, --stages and --boundaries",
                          "missing --module PATH (or --stages N, --boundaries A,B)");
  command_line.Value("-o,--output", "OUT.onnx", "the extracted model (written atomically; - for standard output)")
      ->required();
  command_line.Input("--ort-profile", "P",
                     "balance --stages by kernel time from an ONNX Runtime profile")
      ->needs(stages_option);
  command_line.Flag("--allow-overwrite", "allow OUT to be an input (MODEL.onnx, the manifest, ...)");
  command_line.Flag("--json", "print inputs, outputs and counts as JSON");
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  if (args->option("--stages") || args->option("--boundaries")) {
    return RunExtractStages(command_line, *args);
  }
  const std::string* module = args->option("--module");
  const std::string* output = args->option("--output");
  if (absl::Status target = CheckStandardOutputTarget(*output); !target.ok()) {
    return Fail(kTool, target);
  }
  const std::string& input = args->positional[0];
  semmap::ExtractOptions options;
  options.allow_overwrite = args->has("--allow-overwrite");
  options.protected_paths = args->inputs;
  if (const std::string* m = args->option("--manifest")) options.manifest_path = *m;

  auto model = LoadWithProgress(RequestOf(*args, input));
  if (!model.ok()) return Fail(kTool, model.status());
  absl::StatusOr<semmap::ExtractResult> result;
  {
    Progress progress("writing " + *output);
    result = semmap::ExtractModule(*(*model)->mapper, input, *module, OutputPath(*output), options);
  }
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kNotFound &&
        (*model)->mapper->manifest().find(*module) == semmap::kNoModule) {
      const std::string& file = (*model)->manifest_path ? *(*model)->manifest_path : input;
      return Fail(kTool, absl::NotFoundError(absl::StrCat(file, ": ", result.status().message())),
                  kExitNotFound);
    }
    return Fail(kTool, result.status());
  }
  PrintExtracted(*result, input, *output, args->has("--json"));
  return kExitOk;
}

}  // namespace semmap_cli
