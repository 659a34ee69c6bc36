#include "map_command.h"

#include <algorithm>
#include <array>
#include <iomanip>
#include <iostream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"

namespace semmap_cli {
namespace {

void PrintTree(std::ostream& out, const semmap::Manifest& manifest, const semmap::ModuleNodeCounts& counts,
               semmap::ModuleId id, int depth, int max_depth) {
  const semmap::ModuleInfo& info = manifest.module(id);
  if (counts.subtree[id] == 0) return;
  out << std::string(2 + 2 * depth, ' ')
      << (info.path.empty() ? "<root>" : EscapeControls(info.path));
  if (!info.class_name.empty()) out << " (" << EscapeControls(info.class_name) << ")";
  out << "  " << counts.subtree[id] << " nodes";
  if (counts.own[id] != counts.subtree[id]) out << ", " << counts.own[id] << " own";
  out << "\n";
  if (depth + 1 >= max_depth) return;
  for (semmap::ModuleId child : info.children) {
    PrintTree(out, manifest, counts, child, depth + 1, max_depth);
  }
}

}  // namespace

void PrintMapping(std::ostream& out, const semmap::SemanticMapper& mapper, semmap::NodeId id) {
  const semmap::Graph& graph = mapper.graph();
  const semmap::Mapping m = mapper.moduleFor(id);
  // Names come from the files: escaped, so that none moves the cursor or
  // forges a line.
  out << "node:       " << EscapeControls(graph.node(id).id) << "\n"
      << "op_type:    " << EscapeControls(graph.node(id).op_type) << "\n"
      << "module:     " << (m.mapped() ? EscapeControls(m.module_path) : "(unmapped)") << "\n"
      << "class:      " << EscapeControls(m.class_name) << "\n"
      << "qualified:  " << EscapeControls(m.qualified_class) << "\n"
      << "category:   " << m.category << "\n"
      << "confidence: " << m.confidence << "\n"
      << "strategy:   " << semmap::StrategyName(m.strategy) << "\n"
      << "evidence:   " << EscapeControls(m.evidence) << "\n";
  const std::vector<absl::string_view> origins = mapper.originPathsOf(id);
  if (origins.empty()) return;
  out << "origins:   ";
  for (absl::string_view o : origins) out << " " << EscapeControls(o);
  out << "\n";
}

void PrintSummary(std::ostream& out, const LoadedModel& model, int max_depth, bool json) {
  const semmap::SemanticMapper& mapper = *model.mapper;
  if (json) {
    semmap::JsonSources sources;
    sources.model = model.model_path;
    sources.manifest = model.manifest_path.value_or(std::string());
    sources.reference = model.reference_path.value_or(std::string());
    semmap::WriteSummaryJson(out, mapper, sources);
    return;
  }
  const semmap::Graph& graph = mapper.graph();
  const semmap::Manifest& manifest = mapper.manifest();
  const auto counts = mapper.strategyCounts();
  const std::size_t mapped = mapper.mappedCount();
  const semmap::MappingList all = mapper.mapAll();
  const std::size_t confident = static_cast<std::size_t>(
      std::count_if(all.begin(), all.end(), [](const semmap::Mapping& m) { return m.confident(); }));
  const semmap::RootBinding& b = mapper.rootBinding();
  const semmap::ModuleNodeCounts per_module = semmap::CountModuleNodes(mapper);
  out << "model:    " << EscapeControls(model.model_path) << " (" << graph.size() << " nodes, "
      << EscapeControls(graph.producerName()) << " " << EscapeControls(graph.producerVersion())
      << ", opset "
      << graph.opset() << ")\n";
  const semmap::Provenance& provenance = mapper.provenance();
  if (model.manifest_path || provenance.manifest == semmap::InputSource::kRecord) {
    out << "manifest: "
        << (model.manifest_path ? EscapeControls(*model.manifest_path)
                                : std::string("the model's provenance record"))
        << " (" << EscapeControls(manifest.modelClass()) << ", " << manifest.size()
        << " modules)\n";
  } else {
    out << "manifest: none (module paths from node names; classes unknown)\n";
  }
  if (provenance.record != semmap::RecordUse::kAbsent) {
    out << "record:   " << semmap::RecordUseName(provenance.record);
    if (provenance.record != semmap::RecordUse::kIgnored) {
      out << " (" << provenance.record_bytes << " bytes, "
          << EscapeControls(provenance.record_generator) << ", made from graph "
          << provenance.record_fingerprint << ")";
    }
    if (!provenance.note.empty()) out << ": " << EscapeControls(provenance.note);
    out << "\n";
  } else if (!model.manifest_path && !model.reference_path) {
    // A tool that rebuilt the model may have dropped the record with the
    // model's metadata (docs/record.md): nothing in the file says where it
    // came from.
    out << "record:   none: this file carries no provenance; pass the manifest (--manifest)\n";
  }
  if (model.reference_path || provenance.reference == semmap::InputSource::kRecord) {
    const semmap::ReferenceCheck& check = mapper.referenceCheck();
    out << "reference: "
        << (model.reference_path ? EscapeControls(*model.reference_path)
                                 : std::string("the record's graph"))
        << " ("
        << counts[static_cast<std::size_t>(semmap::Strategy::kReference)]
        << " nodes carried over, " << check.own_answers_kept << " own answers kept; "
        << (check.same_graph && provenance.reference == semmap::InputSource::kRecord
                ? "the model's own graph, without its names"
            : check.same_graph ? "the model itself, not used"
                             : check.ancestor() ? "looks like its source" : "NOT its source")
        << ")\n";
  }
  out << "root:     ONNX root = "
      << (manifest.path(b.root).empty() ? "manifest root"
                                               : "module " + EscapeControls(manifest.path(b.root)));
  if (!b.wrapper.empty()) {
    out << ", under the ONNX-only wrapper scope /";
    for (std::size_t i = 0; i < b.wrapper.size(); ++i) {
      out << (i ? "/" : "") << EscapeControls(b.wrapper[i]);
    }
  }
  out << "\n";
  if (mapper.hasManifest()) {
    const semmap::ManifestFit& fit = mapper.manifestFit();
    out << "fit:      " << (fit.checked && !fit.fits ? "DOES NOT FIT" : fit.verdict()) << " ("
        << EscapeControls(fit.evidence) << ")\n";
  }
  const auto share = [&graph](std::size_t n) {
    return graph.size() ? 100.0 * static_cast<double>(n) / static_cast<double>(graph.size())
                        : 0.0;
  };
  out << std::fixed << std::setprecision(1);
  out << "answered: " << mapped << " of " << graph.size() << " nodes (" << share(mapped)
      << "%) have a module\n";
  out << "confident: " << confident << " of " << graph.size() << " nodes (" << share(confident)
      << "%) at confidence >= " << semmap::kConfidentFloor
      << ", a floor no answer above has failed on the corpus\n";
  out.unsetf(std::ios::floatfield);
  out << std::setprecision(6);
  out << "strategies:\n";
  for (std::size_t s = 0; s < semmap::kStrategyCount; ++s) {
    out << "  " << std::left << std::setw(18)
        << semmap::StrategyName(static_cast<semmap::Strategy>(s)) << std::right << std::setw(8)
        << counts[s] << "\n";
  }
  if (max_depth > 0) {
    out << "modules (nodes per subtree, depth " << max_depth << "):\n";
    PrintTree(out, manifest, per_module, manifest.root(), 0, max_depth);
  }
}

int RunMap(const std::string& tool, int argc, char** argv, const ModelLoader& load) {
  const std::string pad(tool.size(), ' ');
  CommandLine command_line(
      tool,
      absl::StrCat(tool, " MODEL.onnx [--manifest MANIFEST.json] [--node NAME]\n", "       ",
                   pad, " [--reference ORIGINAL.onnx] [--no-record] [--depth N] [--json]"),
      "Maps every node of MODEL.onnx to the module that produced it.\n",
      "Exit codes: 0 ok, 1 no such node, 2 bad usage or input.\n");
  command_line.Input("--manifest", "MANIFEST.json",
                     "hierarchy manifest written by `python -m semmap.manifest`;\n"
                     "without it, module paths come from the node names alone");
  command_line.Value("--node", "NAME", "print the mapping of one node (its name or semmap id)");
  command_line.Input("--reference", "ORIGINAL.onnx", kReferenceHelp);
  command_line.Flag("--no-record", kNoRecordHelp);
  command_line.Flag("--allow-manifest-mismatch", kAllowMismatchHelp);
  command_line.Value("--depth", "N", "module tree depth in the summary (default 3, 0 = no tree)");
  command_line.Flag("--json", "machine-readable output");
  command_line.Positionals(1, 1, "expected exactly one MODEL.onnx");
  int exit_code = kExitOk;
  std::optional<Args> args = command_line.Parse(argc, argv, &exit_code);
  if (!args) return exit_code;
  int depth = 3;
  if (const std::string* d = args->option("--depth")) {
    if (!absl::SimpleAtoi(*d, &depth) || depth < 0 || depth > 1000) {
      return command_line.UsageError(
          absl::StrCat("--depth needs an integer from 0 to 1000, got \"", *d, "\""));
    }
  }
  LoadRequest request;
  request.model_path = args->positional[0];
  request.manifest_path = args->option("--manifest");
  request.reference_path = args->option("--reference");
  request.allow_manifest_mismatch = args->has("--allow-manifest-mismatch");
  request.use_record = !args->has("--no-record");
  auto model = load(request);
  if (!model.ok()) return Fail(tool.c_str(), model.status());
  const semmap::Graph& graph = (*model)->graph();
  const bool json = args->has("--json");
  if (!json) PrintFitNotes(**model);
  if (const std::string* node = args->option("--node")) {
    const semmap::NodeId id = graph.find(*node);
    if (id == semmap::kNoNode) {
      return Fail(tool.c_str(),
                  absl::NotFoundError(absl::StrCat((*model)->model_path, ": no node named \"",
                                                   *node, "\"")),
                  kExitNotFound);
    }
    if (json) {
      std::cout << semmap::MappingJson(*(*model)->mapper, id) << "\n";
    } else {
      PrintMapping(std::cout, *(*model)->mapper, id);
    }
    return kExitOk;
  }
  PrintSummary(std::cout, **model, depth, json);
  return kExitOk;
}

}  // namespace semmap_cli
