// semmap annotate and semmap sidecar: the commands that write files.
#include <iostream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "commands.h"
#include "output_target.h"
#include "progress.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kAnnotateTool[] = "semmap annotate";
constexpr char kSidecarTool[] = "semmap sidecar";
constexpr char kEmbedTool[] = "semmap embed";

}  // namespace

namespace {

// The options of `semmap annotate`.
void AddAnnotateOptions(CommandLine& command_line) {
  command_line.Value("-o,--output", "OUT.onnx",
                     "the annotated model (written atomically; - for standard\n"
                     "output, the counts then on standard error)")
      ->required();
  command_line.Flag("--allow-overwrite", "allow OUT to be an input (MODEL.onnx, the manifest, ...)");
  command_line.Flag("--overwrite-namespace", "replace a namespace the exporter wrote (kept by default)");
  command_line.Flag("--no-namespace", "do not write namespace entries");
  command_line.Flag("--doc-string", "also set each node's doc_string to the JSON form");
  CLI::Option* scoped = command_line.Flag(
      "--scoped-names",
      "also rename each node mapped with confidence >= C to a\n"
      "TorchScript-style scope (\"/encoder/layer.0/.../node_linear_4\"):\n"
      "names survive optimizers that drop metadata_props; inputs,\n"
      "outputs and value names are unchanged (share/doc/semmap/annotate.md)");
  command_line.Value("--min-confidence", "C",
                     "floor for --scoped-names, from 0.9 (the default) to 1:\n"
                     "renamed nodes read back at confidence 1")
      ->needs(scoped);
  command_line.Flag("--json", "print the result counts as JSON");
}

// What `semmap annotate` wrote, as text or JSON.
void PrintAnnotated(const semmap::AnnotateResult& r, const semmap::AnnotateOptions& options,
                    const std::string& input, const std::string& output, bool json) {
  std::ostream& out = SummaryStream(output);
  if (r.external_tensors > 0 && !IsStandardOutput(output)) {
    const std::string moved = semmap::MovedExternalDataDirectory(input, output);
    if (!moved.empty()) {
      std::cerr << kAnnotateTool << ": note: " << r.external_tensors
                << " initializers keep their external data paths, relative to " << moved
                << "; copy the data files there\n";
    }
  }
  if (json) {
    out << semmap::AnnotateResultJson(r, options, input, output) << "\n";
  } else {
    out << output << ": annotated " << r.nodes << " nodes (" << r.mapped
              << " mapped); namespace written on " << r.namespaces_written
              << ", exporter's kept on " << r.namespaces_kept << "\n";
    if (options.scoped_names) {
      out << output << ": " << r.renamed << " nodes renamed to scoped names, "
                << r.scoped_kept << " already scoped\n";
    }
  }
}

}  // namespace

int RunAnnotateCommand(int argc, char** argv) {
  CommandLine command_line(
      kAnnotateTool,
      "semmap annotate MODEL.onnx [--manifest MANIFEST.json] -o OUT.onnx\n"
      "                       [--allow-overwrite] [--overwrite-namespace]\n"
      "                       [--no-namespace] [--doc-string] [--json]\n"
      "                       [--scoped-names [--min-confidence C]]",
      "Writes a copy of MODEL.onnx whose nodes carry metadata_props module@semmap,\n"
      "class@semmap, confidence@semmap, strategy@semmap, category@semmap and a\n"
      "dynamo-style `namespace` (\": <root class>/<path>: <class>/...\") that\n"
      "viewers show as a module hierarchy. Annotating an annotated file replaces\n"
      "these entries (and the semmap.* ones of earlier versions).\n",
      "Exit codes: 0 ok, 2 bad usage or input, OUT not writable, or OUT == MODEL\n"
      "without --allow-overwrite (the input is never touched then).\n");
  AddAnnotateOptions(command_line);
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  const std::string* output = args->option("--output");
  const std::string& input = args->positional[0];
  semmap::AnnotateOptions options;
  if (absl::Status target = CheckStandardOutputTarget(*output); !target.ok()) {
    return Fail(kAnnotateTool, target);
  }
  options.allow_overwrite = args->has("--allow-overwrite");
  options.protected_paths = args->inputs;
  if (const std::string* m = args->option("--manifest")) options.manifest_path = *m;
  options.overwrite_namespace = args->has("--overwrite-namespace");
  options.write_namespace = !args->has("--no-namespace");
  options.doc_string_json = args->has("--doc-string");
  options.scoped_names = args->has("--scoped-names");
  if (const std::string* floor = args->option("--min-confidence")) {
    double value = 0;
    if (!absl::SimpleAtod(*floor, &value) || !(value >= semmap::kConfidentFloor && value <= 1.0)) {
      return Fail(kAnnotateTool,
                  absl::InvalidArgumentError(absl::StrCat(
                      "--min-confidence needs a number from ", semmap::kConfidentFloor,
                      " to 1, got \"", *floor,
                      "\": a renamed node reads back as an exact scope at confidence 1, so a "
                      "lower floor would turn guesses into certainties")));
    }
    options.scoped_name_min_confidence = value;
  }

  auto model = LoadWithProgress(RequestOf(*args, input));
  if (!model.ok()) return Fail(kAnnotateTool, model.status());
  absl::StatusOr<semmap::AnnotateResult> result;
  {
    Progress progress("writing " + *output);
    result = semmap::Annotate(*(*model)->mapper, input, OutputPath(*output), options);
  }
  if (!result.ok()) return Fail(kAnnotateTool, result.status());
  PrintAnnotated(*result, options, input, *output, args->has("--json"));
  return kExitOk;
}

int RunSidecarCommand(int argc, char** argv) {
  CommandLine command_line(
      kSidecarTool,
      "semmap sidecar MODEL.onnx [--manifest MANIFEST.json] [-o OUT.json]\n"
      "                      [--model-specific] [--compact] [--allow-overwrite]",
      "Writes every node's mapping and the module tree as JSON (format\n"
      "semmap.sidecar, schema_version 1; schema/sidecar.schema.json,\n"
      "share/doc/semmap/sidecar.md) to OUT.json, or to stdout without -o.\n",
      "Exit codes: 0 ok, 2 bad usage or input or OUT not writable.\n");
  command_line.Value("-o,--output", "OUT.json",
                     "the sidecar file (written atomically; - or none: standard output)");
  command_line.Flag("--model-specific", "tree without torch.nn leaf modules");
  command_line.Flag("--compact", "one line instead of indented JSON");
  command_line.Flag("--allow-overwrite", "allow OUT to be an input (the model, the manifest, ...)");
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  semmap::SidecarOptions options;
  options.model_path = args->positional[0];
  if (const std::string* m = args->option("--manifest")) options.manifest_path = *m;
  options.model_specific_tree = args->has("--model-specific");
  options.allow_overwrite = args->has("--allow-overwrite");
  options.protected_paths = args->inputs;
  options.indent = args->has("--compact") ? -1 : 1;

  auto model = LoadWithProgress(RequestOf(*args, options.model_path));
  if (!model.ok()) return Fail(kSidecarTool, model.status());
  const std::string* output = args->option("--output");
  if (output == nullptr || IsStandardOutput(*output)) {
    std::cout << semmap::SidecarJson(*(*model)->mapper, options);
    return kExitOk;
  }
  absl::Status written;
  {
    Progress progress("writing " + *output);
    written = semmap::WriteSidecar(*(*model)->mapper, *output, options);
  }
  if (!written.ok()) return Fail(kSidecarTool, written);
  std::cout << *output << ": sidecar with " << (*model)->graph().size() << " nodes, "
            << (*model)->mapper->mappedCount() << " mapped\n";
  return kExitOk;
}

int RunEmbedCommand(int argc, char** argv) {
  CommandLine command_line(
      kEmbedTool,
      "semmap embed MODEL.onnx [--manifest MANIFEST.json] [--source EXPORT.onnx]\n"
      "                    [--no-record] -o OUT.onnx [--allow-overwrite] [--json]",
      "Writes a copy of MODEL.onnx that carries its own provenance record: the\n"
      "manifest, a weightless copy of the export's graph and its mapping, in one\n"
      "model-level metadata_props entry (semmap.record; share/doc/semmap/record.md).\n"
      "The deployment tools keep model metadata: a copy processed by onnxslim, ONNX\n"
      "Runtime, a quantizer or an fp16 converter then maps with no other file\n"
      "(`semmap map OUT_processed.onnx`). Embed right after exporting; or give the\n"
      "export a processed MODEL.onnx was made from as --source.\n",
      "Exit codes: 0 ok, 2 bad usage or input, no manifest, MODEL not a processed\n"
      "copy of --source, OUT not writable, or OUT an input without --allow-overwrite.\n");
  command_line.Value("-o,--output", "OUT.onnx",
                     "the model with its record (written atomically; - for\n"
                     "standard output)")
      ->required();
  command_line.Input("--manifest", "MANIFEST.json",
                     "the manifest of the model (python -m semmap.manifest);\n"
                     "without it, the one of the record the export carries");
  command_line.Input("--source", "EXPORT.onnx",
                     "the unprocessed export MODEL.onnx was made from: the\n"
                     "record describes it (default: MODEL.onnx itself)");
  command_line.Flag("--no-record",
                    "do not read the record MODEL.onnx (or --source) carries:\n"
                    "map it with --manifest alone, and replace a damaged record");
  command_line.Flag("--allow-manifest-mismatch", kAllowMismatchHelp);
  command_line.Flag("--allow-overwrite", "allow OUT to be an input (MODEL.onnx, the manifest, ...)");
  command_line.Flag("--json", "print the result as JSON");
  command_line.Positionals(1, 1, "expected exactly one MODEL.onnx");
  int exit_code = 0;
  std::optional<Args> args = command_line.Parse(argc, argv, &exit_code);
  if (!args) return exit_code;
  const std::string& target = args->positional[0];
  const std::string* source_option = args->option("--source");
  const std::string source = source_option != nullptr ? *source_option : target;
  LoadRequest request;
  request.model_path = source;
  request.manifest_path = args->option("--manifest");
  request.allow_manifest_mismatch = args->has("--allow-manifest-mismatch");
  request.use_record = !args->has("--no-record");
  request.notes_on_stderr = !args->has("--json");
  auto model = LoadWithProgress(request);
  if (!model.ok()) return Fail(kEmbedTool, model.status());
  semmap::EmbedOptions options;
  if (request.manifest_path != nullptr) options.manifest_path = *request.manifest_path;
  options.allow_overwrite = args->has("--allow-overwrite");
  options.protected_paths = args->inputs;
  const std::string& output = *args->option("--output");
  if (absl::Status where = CheckStandardOutputTarget(output); !where.ok()) {
    return Fail(kEmbedTool, where);
  }
  absl::StatusOr<semmap::EmbedResult> result;
  {
    Progress progress("writing " + output);
    result = semmap::Embed(*(*model)->mapper, source, target, OutputPath(output), options);
  }
  if (!result.ok()) return Fail(kEmbedTool, result.status());
  // With -o -, the model is the standard output: what was written goes to
  // standard error.
  std::ostream& summary = SummaryStream(output);
  if (args->has("--json")) {
    summary << semmap::EmbedResultJson(*result, target, output) << "\n";
    return kExitOk;
  }
  summary << output << ": record of " << result->nodes << " nodes, " << result->record_bytes
          << " bytes (graph " << result->graph_bytes << " and manifest "
          << result->manifest_bytes << " bytes before compression), from graph "
          << result->fingerprint;
  if (result->replaced > 0) summary << "; replaced the record it carried";
  summary << "\n";
  return kExitOk;
}

}  // namespace semmap_cli
