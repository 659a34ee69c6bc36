// semmap report: the module tree as a self-contained HTML page.
#include <iostream>
#include <optional>
#include <string>
#include <utility>

#include "commands.h"
#include "output_target.h"
#include "progress.h"
#include "semmap/report.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kTool[] = "semmap report";

}  // namespace

int RunReportCommand(int argc, char** argv) {
  CommandLine command_line(
      kTool,
      "semmap report MODEL.onnx [--manifest MANIFEST.json] -o REPORT.html\n"
      "                     [--ort-profile PROFILE.json] [--numerics NUMERICS.json]\n"
      "                     [--allow-overwrite]",
      "Writes one self-contained HTML file (no network needed): the module tree,\n"
      "collapsible, with node and parameter counts, op-type mix and mapping\n"
      "confidence as colour; a search box over module paths, classes and node\n"
      "names; each node's mapping and evidence. Open REPORT.html#q=TEXT to start\n"
      "with a search, #m=PATH to select a module: REPORT.html#q=attn&m=model.h.1\n"
      "(the page keeps the fragment up to date, so a view can be shared).\n"
      "With --numerics (semmap compare-numerics --json), a numerics tab plots\n"
      "the error along the model (#v=numerics opens it).\n",
      "Exit codes: 0 ok, 2 bad usage or input or OUT not writable.\n");
  command_line.Value("-o,--output", "REPORT.html",
                     "the report (written atomically; - for standard output)")
      ->required();
  command_line.Input("--ort-profile", "P",
                     "add kernel time from an ONNX Runtime profile of MODEL.onnx\n"
                     "(see semmap profile): a time column in the tree, coloured\n"
                     "by share of the attributed time, and per node");
  command_line.Input("--numerics", "N",
                     "add per-module error from semmap compare-numerics --json\n"
                     "(of MODEL.onnx and another file): a numerics tab with the\n"
                     "error along the model, and each module's error in the tree");
  command_line.Flag("--allow-overwrite",
                     "allow OUT to be an input (the model, the manifest, ...)");
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  const std::string* output = args->option("--output");
  semmap::ReportOptions options;
  if (absl::Status target = CheckStandardOutputTarget(*output); !target.ok()) {
    return Fail(kTool, target);
  }
  options.model_path = args->positional[0];
  if (const std::string* m = args->option("--manifest")) options.manifest_path = *m;
  options.allow_overwrite = args->has("--allow-overwrite");
  options.protected_paths = args->inputs;

  std::optional<semmap::ReportNumerics> numerics;
  if (const std::string* numerics_path = args->option("--numerics")) {
    absl::StatusOr<semmap::ReportNumerics> read = semmap::ReadReportNumerics(*numerics_path);
    if (!read.ok()) return Fail(kTool, read.status());
    numerics = *std::move(read);
    options.numerics = &*numerics;
    options.numerics_path = *numerics_path;
  }

  const std::string* profile_path = args->option("--ort-profile");
  if (profile_path != nullptr) options.profile_path = *profile_path;
  auto loaded = LoadProfiledWithProgress(RequestOf(*args, options.model_path), profile_path);
  if (!loaded.ok()) return Fail(kTool, loaded.status());
  const std::unique_ptr<LoadedModel>& model = loaded->model;
  const std::optional<semmap::ProfileAttribution>& attribution = loaded->attribution;
  options.profile = loaded->attributionOrNull();
  absl::Status written;
  {
    Progress progress("writing " + *output);
    written = semmap::WriteReport(*model->mapper, OutputPath(*output), options);
  }
  if (!written.ok()) return Fail(kTool, written);
  std::ostream& summary = SummaryStream(*output);
  summary << *output << ": report of " << model->mapper->manifest().size() << " modules, "
            << model->graph().size() << " nodes (" << model->mapper->mappedCount()
            << " mapped)";
  if (attribution) {
    summary << ", kernel time of " << attribution->attributed_nodes << " of "
              << attribution->profiled_nodes << " profiled nodes";
  }
  if (numerics) summary << ", error of " << numerics->leaf.size() << " modules";
  summary << "\n";
  return kExitOk;
}

}  // namespace semmap_cli
