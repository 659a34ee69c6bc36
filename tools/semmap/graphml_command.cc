// semmap graphml: the mapped graph as GraphML with modules as nested graphs.
#include <iostream>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "cli_util.h"
#include "commands.h"
#include "output_target.h"
#include "progress.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kTool[] = "semmap graphml";

}  // namespace

int RunGraphmlCommand(int argc, char** argv) {
  CommandLine command_line(
      kTool,
      "semmap graphml MODEL.onnx [--manifest MANIFEST.json] -o OUT.graphml\n"
      "                      [--depth N] [--ort-profile PROFILE.json] [--allow-overwrite] [--json]",
      "Writes the graph as GraphML for yEd, Gephi, networkx or igraph: each module\n"
      "with nodes is a compound node holding a nested graph of its submodules and\n"
      "ops (yfiles.foldertype=\"group\"); ops carry op_type, name, module, class,\n"
      "category, confidence and strategy; edges run from producer to consumer with\n"
      "the value name as \"tensor\"; graph inputs and outputs are nodes, initializers\n"
      "are not drawn. Format: share/doc/semmap/graphml.md.\n",
      "Exit codes: 0 ok, 2 bad usage or input or OUT not writable.\n");
  command_line.Value("-o,--output", "OUT.graphml",
                     "the GraphML file (written atomically; - for standard output)")
      ->required();
  command_line.Value("--depth", "N",
                     "fold modules at depth N (root = 0; N >= 1) into one\n"
                     "node each, with their node count and op mix");
  command_line.Input("--ort-profile", "P",
                     "add each op's and module's kernel time (time_us) from\n"
                     "an ONNX Runtime profile of MODEL.onnx (semmap profile)");
  command_line.Flag("--allow-overwrite",
                     "allow OUT to be an input file");
  command_line.Flag("--json",
                     "print the counts as JSON");
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  const std::string* output = args->option("--output");
  semmap::GraphmlOptions options;
  if (absl::Status target = CheckStandardOutputTarget(*output); !target.ok()) {
    return Fail(kTool, target);
  }
  if (const std::string* d = args->option("--depth")) {
    if (!absl::SimpleAtoi(*d, &options.max_depth) || options.max_depth < 1 ||
        options.max_depth > 10000) {
      return command_line.UsageError(
          absl::StrCat("--depth needs an integer from 1 to 10000, got \"", *d, "\""));
    }
  }
  const std::string& input = args->positional[0];
  options.allow_overwrite = args->has("--allow-overwrite");
  options.protected_paths = args->inputs;
  const std::string* profile_path = args->option("--ort-profile");
  auto loaded = LoadProfiledWithProgress(RequestOf(*args, input), profile_path);
  if (!loaded.ok()) return Fail(kTool, loaded.status());
  const semmap::SemanticMapper& mapper = *loaded->model->mapper;
  options.profile = loaded->attributionOrNull();
  absl::StatusOr<semmap::GraphmlResult> result;
  {
    Progress progress("writing " + *output);
    result = semmap::WriteGraphml(mapper, OutputPath(*output), options);
  }
  if (!result.ok()) return Fail(kTool, result.status());
  if (args->has("--json")) {
    SummaryStream(*output) << semmap::GraphmlResultJson(*result, options, input, *output)
                           << "\n";
  } else {
    SummaryStream(*output) << *output << ": " << result->module_groups << " modules as nested graphs, "
              << result->collapsed_modules << " folded, " << result->op_nodes << " ops, "
              << result->io_nodes << " inputs/outputs, " << result->edges << " edges\n";
  }
  return kExitOk;
}

}  // namespace semmap_cli
