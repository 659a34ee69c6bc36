#include "map_report.h"

#include <algorithm>
#include <array>
#include <iomanip>
#include <iostream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "json_out.h"

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

absl::StatusOr<std::unique_ptr<LoadedModel>> LoadModel(const std::string& model_path,
                                                      const std::string* manifest_path,
                                                      const std::string* reference_path,
                                                      bool allow_manifest_mismatch) {
  auto loaded = std::make_unique<LoadedModel>();
  loaded->model_path = model_path;
  if (reference_path == nullptr) {
    // Graph and manifest read on two threads.
    semmap::SemanticMapper::OpenOptions options;
    options.mapper.allow_manifest_mismatch = allow_manifest_mismatch;
    if (manifest_path != nullptr) loaded->manifest_path = *manifest_path;
    auto mapper = semmap::SemanticMapper::Open(
        model_path, manifest_path != nullptr ? *manifest_path : std::string(), options);
    if (absl::IsFailedPrecondition(mapper.status()) && manifest_path != nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          mapper.status().message(), "; pass --allow-manifest-mismatch to map anyway"));
    }
    if (!mapper.ok()) return mapper.status();
    loaded->graph.emplace(mapper->graph());
    if (mapper->hasManifest()) loaded->manifest = mapper->sharedManifest();
    loaded->mapper.emplace(*std::move(mapper));
    return loaded;
  }
  auto graph = semmap::Graph::Load(model_path);
  if (!graph.ok()) return graph.status();
  loaded->graph.emplace(*std::move(graph));
  if (manifest_path != nullptr) {
    loaded->manifest_path = *manifest_path;
    auto manifest = semmap::Manifest::Load(*manifest_path);
    if (!manifest.ok()) return manifest.status();
    loaded->manifest = std::make_shared<const semmap::Manifest>(*std::move(manifest));
  }
  semmap::MapperOptions options;
  options.allow_manifest_mismatch = allow_manifest_mismatch;
  std::optional<semmap::Graph> reference;
  if (reference_path != nullptr) {
    loaded->reference_path = *reference_path;
    auto reference_graph = semmap::Graph::Load(*reference_path);
    if (!reference_graph.ok()) {
      return absl::Status(reference_graph.status().code(),
                          absl::StrCat("--reference: ", reference_graph.status().message()));
    }
    reference.emplace(*std::move(reference_graph));
    options.reference = &*reference;
  }
  auto mapper = semmap::SemanticMapper::Create(*loaded->graph, loaded->manifest, options);
  if (!mapper.ok() && reference_path != nullptr) {
    return absl::Status(mapper.status().code(),
                        absl::StrCat(model_path, ": --reference ", *reference_path, ": ",
                                     mapper.status().message()));
  }
  if (absl::IsFailedPrecondition(mapper.status()) && manifest_path != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(model_path, ": manifest ", *manifest_path, " is of another model: ",
                     mapper.status().message(),
                     "; pass --allow-manifest-mismatch to map anyway"));
  }
  if (!mapper.ok()) return mapper.status();
  loaded->mapper.emplace(*std::move(mapper));
  return loaded;
}

void AppendMappingJson(const semmap::Graph& graph, semmap::NodeId id, const semmap::Mapping& m,
                       int indent, std::string* out) {
  const semmap::Node& n = graph.node(id);
  JsonObjectText j(indent, out);  // keys in sorted order
  j.String("category", m.category);
  j.String("class", m.class_name);
  j.Number("confidence", m.confidence);
  j.String("domain", n.domain);
  j.String("evidence", m.evidence);
  if (m.mapped()) {
    j.String("module", m.module_path);
  } else {
    j.Null("module");
  }
  j.String("name", n.name);
  j.String("node", n.id);
  j.String("op_type", n.op_type);
  j.String("qualified_class", m.qualified_class);
  j.String("strategy", semmap::StrategyName(m.strategy));
  j.Close();
}

void PrintMapping(std::ostream& out, const semmap::Graph& graph, semmap::NodeId id,
                  const semmap::Mapping& m) {
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
}

namespace {

// The summary as one JSON object: what nlohmann::json's dump(2) of it would
// give (keys in sorted order), with the per-module list written as it goes.
void PrintSummaryJson(std::ostream& out, const LoadedModel& model, std::size_t mapped,
                      std::size_t confident,
                      const std::array<std::size_t, semmap::kStrategyCount>& counts,
                      const semmap::ModuleNodeCounts& per_module) {
  const semmap::SemanticMapper& mapper = *model.mapper;
  const semmap::Manifest& manifest = mapper.manifest();
  const semmap::RootBinding& b = mapper.rootBinding();
  std::string text = "{\n";
  // Members in key order; each after the first starts on a new line.
  bool first = true;
  auto member = [&](absl::string_view key) {
    if (!first) text += ",\n";
    first = false;
    absl::StrAppend(&text, "  \"", key, "\": ");
  };
  auto small = [&](absl::string_view key, const nlohmann::json& value) {
    member(key);
    AppendIndentedJson(value, 2, &text);
  };
  small("confident", confident);
  small("confident_floor", semmap::kConfidentFloor);
  small("manifest",
        model.manifest_path ? nlohmann::json(*model.manifest_path) : nlohmann::json());
  if (model.manifest_path) {
    const semmap::ManifestFit& fit = mapper.manifestFit();
    nlohmann::json notes = nlohmann::json::array();
    for (const semmap::FitNote& note : fit.notes) {
      notes.push_back({{"reason", std::string(semmap::FitNoteKindName(note.kind))},
                       {"count", note.count},
                       {"nodes", note.nodes},
                       {"example", note.example},
                       {"text", note.text}});
    }
    small("manifest_fit", {{"checked", fit.checked},
                           {"fits", fit.fits},
                           {"verdict", std::string(fit.verdict())},
                           {"notes", std::move(notes)},
                           {"scoped_nodes", fit.scoped_nodes},
                           {"resolved_nodes", fit.resolved_nodes},
                           {"distinct_scopes", fit.distinct_scopes},
                           {"resolved_scopes", fit.resolved_scopes},
                           {"class_conflicts", fit.class_conflicts},
                           {"named_tensors", fit.named_tensors},
                           {"matched_tensors", fit.matched_tensors},
                           {"shape_mismatches", fit.shape_mismatches},
                           {"unused_items", fit.unused_items},
                           {"unnamed_weights", fit.unnamed_weights},
                           {"weight_size_mismatches", fit.weight_size_mismatches},
                           {"evidence", fit.evidence}});
  }
  small("mapped", mapped);
  small("model", model.model_path);
  member("modules");
  bool any = false;
  for (std::size_t i = 0; i < manifest.size(); ++i) {
    if (per_module.subtree[i] == 0) continue;
    const semmap::ModuleInfo& info = manifest.module(static_cast<semmap::ModuleId>(i));
    text += any ? ",\n    " : "[\n    ";
    any = true;
    JsonObjectText item(4, &text);  // keys in sorted order
    item.String("class", info.class_name);
    item.Unsigned("nodes", per_module.own[i]);
    item.String("path", info.path);
    item.Unsigned("subtree_nodes", per_module.subtree[i]);
    item.Close();
    if (text.size() >= (1 << 20)) {  // written as it grows
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      text.clear();
    }
  }
  text += any ? "\n  ]" : "[]";
  small("nodes", mapper.graph().size());
  if (model.reference_path) small("reference", *model.reference_path);
  small("root_binding", {{"root", manifest.module(b.root).path},
                         {"wrapper", b.wrapper},
                         {"scoped_nodes", b.scoped_nodes},
                         {"resolved_nodes", b.resolved_nodes}});
  nlohmann::json strategies = nlohmann::json::object();
  for (std::size_t s = 0; s < semmap::kStrategyCount; ++s) {
    strategies[std::string(semmap::StrategyName(static_cast<semmap::Strategy>(s)))] = counts[s];
  }
  small("strategies", strategies);
  text += "\n}\n";
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

void PrintSummary(std::ostream& out, const LoadedModel& model, int max_depth, bool json) {
  const semmap::SemanticMapper& mapper = *model.mapper;
  const semmap::Graph& graph = mapper.graph();
  const semmap::Manifest& manifest = mapper.manifest();
  const auto counts = mapper.strategyCounts();
  const std::size_t mapped = mapper.mappedCount();
  const std::size_t confident = static_cast<std::size_t>(
      std::count_if(mapper.mapAll().begin(), mapper.mapAll().end(),
                    [](const semmap::Mapping& m) { return m.confident(); }));
  const semmap::RootBinding& b = mapper.rootBinding();
  const semmap::ModuleNodeCounts per_module = semmap::CountModuleNodes(mapper);
  if (json) {
    PrintSummaryJson(out, model, mapped, confident, counts, per_module);
    return;
  }
  out << "model:    " << EscapeControls(model.model_path) << " (" << graph.size() << " nodes, "
      << EscapeControls(graph.producerName()) << " " << EscapeControls(graph.producerVersion())
      << ", opset "
      << graph.opset() << ")\n";
  if (model.manifest_path) {
    out << "manifest: " << EscapeControls(*model.manifest_path) << " ("
        << EscapeControls(manifest.modelClass()) << ", "
        << manifest.size() << " modules)\n";
  } else {
    out << "manifest: none (module paths from node names; classes unknown)\n";
  }
  if (model.reference_path) {
    out << "reference: " << EscapeControls(*model.reference_path) << " ("
        << counts[static_cast<std::size_t>(semmap::Strategy::kReference)]
        << " nodes carried over)\n";
  }
  out << "root:     ONNX root = "
      << (manifest.module(b.root).path.empty() ? "manifest root"
                                               : "module " + EscapeControls(manifest.module(b.root).path));
  if (!b.wrapper.empty()) {
    out << ", under the ONNX-only wrapper scope /";
    for (std::size_t i = 0; i < b.wrapper.size(); ++i) {
      out << (i ? "/" : "") << EscapeControls(b.wrapper[i]);
    }
  }
  out << "\n";
  if (model.manifest_path) {
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

void PrintFitNotes(const LoadedModel& loaded) {
  if (!loaded.manifest_path || !loaded.mapper) return;
  for (const semmap::FitNote& note : loaded.mapper->manifestFit().notes) {
    std::cerr << "semmap: note: manifest " << EscapeControls(*loaded.manifest_path)
              << " fits with notes: " << EscapeControls(note.text) << "\n";
  }
}

int RunMap(const std::string& tool, int argc, char** argv, const ModelLoader& load) {
  const std::string pad(tool.size(), ' ');
  CommandLine command_line(
      tool,
      absl::StrCat(tool, " MODEL.onnx [--manifest MANIFEST.json] [--node NAME]\n", "       ",
                   pad, " [--reference ORIGINAL.onnx] [--depth N] [--json]"),
      "Maps every node of MODEL.onnx to the module that produced it.\n",
      "Exit codes: 0 ok, 1 no such node, 2 bad usage or input.\n");
  command_line.Value("--manifest", "MANIFEST.json",
                     "hierarchy manifest written by `python -m semmap.manifest`;\n"
                     "without it, module paths come from the node names alone");
  command_line.Value("--node", "NAME", "print the mapping of one node (its name or semmap id)");
  command_line.Value("--reference", "ORIGINAL.onnx", kReferenceHelp);
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
  auto model = load(args->positional[0], args->option("--manifest"), args->option("--reference"),
                    args->has("--allow-manifest-mismatch"));
  if (!model.ok()) return Fail(tool.c_str(), model.status());
  const semmap::Graph& graph = *(*model)->graph;
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
    const semmap::Mapping& m = (*model)->mapper->moduleFor(id);
    if (json) {
      std::string text;
      AppendMappingJson(graph, id, m, 0, &text);
      std::cout << text << "\n";
    } else {
      PrintMapping(std::cout, graph, id, m);
    }
    return kExitOk;
  }
  PrintSummary(std::cout, **model, depth, json);
  return kExitOk;
}

}  // namespace semmap_cli
