// semmap query: which nodes belong to a module, layer, class or pattern.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "commands.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kTool[] = "semmap query";
int PrintNodes(const LoadedModel& model, const semmap::NodeQuery& query,
               const std::vector<semmap::NodeId>& nodes, bool json, bool count) {
  const semmap::Graph& graph = model.graph();
  if (count) {
    std::cout << nodes.size() << "\n";
  } else if (json) {
    semmap::WriteNodeListJson(std::cout, *model.mapper, model.model_path, query, nodes);
  } else {
    for (semmap::NodeId n : nodes) {
      const semmap::Mapping& m = model.mapper->moduleFor(n);
      // Names come from the file: a tab or newline in one must not forge a
      // column or a row.
      std::cout << EscapeControls(graph.node(n).id) << "\t" << EscapeControls(graph.node(n).op_type)
                << "\t" << (m.mapped() ? EscapeControls(m.module_path) : "(unmapped)") << "\t"
                << m.confidence << "\t" << semmap::StrategyName(m.strategy) << "\n";
    }
  }
  return kExitOk;
}

int PrintModules(const LoadedModel& model, const std::vector<semmap::ModuleId>& modules,
                 bool json, bool count) {
  const semmap::Manifest& manifest = model.mapper->manifest();
  if (count) {
    std::cout << modules.size() << "\n";
  } else if (json) {
    semmap::WriteModuleListJson(std::cout, *model.mapper, model.model_path, modules);
  } else {
    for (semmap::ModuleId id : modules) {
      std::cout << EscapeControls(manifest.path(id)) << "\t"
                << EscapeControls(manifest.module(id).class_name) << "\n";
    }
  }
  return kExitOk;
}

int PrintContainers(const LoadedModel& model, const semmap::SemanticQuery& query, bool json,
                    bool count) {
  const auto& containers = query.repeatedContainers();
  const semmap::Manifest& manifest = model.mapper->manifest();
  if (count) {
    std::cout << containers.size() << "\n";
    return kExitOk;
  }
  if (json) {
    semmap::WriteContainerListJson(std::cout, *model.mapper, model.model_path, containers);
    return kExitOk;
  }
  for (const semmap::RepeatedContainer& c : containers) {
    const std::string role = c.layer ? "layers" : !c.outermost ? "nested" : "leaf items";
    std::cout << EscapeControls(manifest.path(c.module)) << "\t" << c.items.size() << " x "
              << EscapeControls(c.item_class) << "\t" << role << "\n";
  }
  return kExitOk;
}

// Query errors: a name that is not there is "not found" (1) and blames the
// file that lacks it; a malformed request (an invalid pattern, a negative
// layer) is bad input (2) and blames the option `flag` that carried it.
int QueryFailure(const LoadedModel& model, absl::string_view flag, const absl::Status& status) {
  if (status.code() != absl::StatusCode::kNotFound) {
    return Fail(kTool, absl::Status(status.code(), absl::StrCat(flag, ": ", status.message())));
  }
  const std::string& file = model.manifest_path ? *model.manifest_path : model.model_path;
  return Fail(kTool, absl::Status(status.code(), absl::StrCat(file, ": ", status.message())),
              kExitNotFound);
}

// The selectors and output options of `semmap query`.
void AddQueryOptions(CommandLine& command_line) {
  CLI::Option* module_option = command_line.Value("--module", "PATH", "nodes of the module (\"\" = root)");
  CLI::Option* layer_option = command_line.Value(
      "--layer", "N",
      "nodes of layer N: item N of every layer container\n(encoder and decoder alike)");
  CLI::Option* class_name_option =
      command_line.Value("--class", "C", "nodes of modules of class C (\"Linear\" or qualified)");
  CLI::Option* category_option = command_line.Value(
      "--category", "NAME",
      "nodes of modules of a semantic category (attention,\nprojection, normalization, mlp, ...:\n"
      "share/semmap/rules/default.json)");
  CLI::Option* pattern_option = command_line.Value(
      "--pattern", "RE",
      "nodes whose module path matches the RE2 pattern\n(unanchored; use ^...$ for the whole path)");
  CLI::Option* below_option = command_line.Value("--below", "CONF", "nodes with confidence below CONF (0..1)");
  CLI::Option* empty_option = command_line.Flag("--empty-modules", "modules with no node in their subtree");
  CLI::Option* containers_option =
      command_line.Flag("--containers", "the repeated containers found in the manifest");
  command_line.ExactlyOne("SELECTOR (exactly one)",
                          {module_option, layer_option, class_name_option, category_option, pattern_option,
                           below_option, empty_option, containers_option},
                          "give exactly one of --module, --layer, --class, --category, "
                          "--pattern, --below, --empty-modules, --containers");
  command_line.Flag("--subtree", "with --module: add its descendants' nodes")->needs(module_option);
  command_line.Value("--container", "P", "with --layer: item N of container P only")->needs(layer_option);
  CLI::Option* json_option = command_line.Flag("--json", "machine-readable output");
  command_line.Flag("--count", "print only the number of results")->excludes(json_option);
}

// The nodes one selector of `args` chose, the flag that chose them (for
// errors) and its description in the JSON output.
struct Selection {
  absl::StatusOr<std::vector<semmap::NodeId>> nodes;
  semmap::NodeQuery description;
  std::string flag;
};

Selection SelectNodes(const semmap::SemanticQuery& query, const Args& args, std::int64_t layer,
                      double below) {
  using Kind = semmap::NodeQuery::Kind;
  Selection out;
  semmap::NodeQuery& d = out.description;
  if (const std::string* p = args.option("--module")) {
    out.flag = "--module";
    out.nodes = query.nodesOfModule(*p, args.has("--subtree"));
    d.kind = Kind::kModule;
    d.text = *p;
    d.subtree = args.has("--subtree");
  } else if (args.option("--layer")) {
    const std::string* container = args.option("--container");
    out.flag = "--layer";
    out.nodes = container ? query.nodesOfLayer(*container, layer) : query.nodesOfLayer(layer);
    d.kind = Kind::kLayer;
    d.layer = layer;
    d.has_container = container != nullptr;
    if (container) d.container = *container;
  } else if (const std::string* c = args.option("--class")) {
    out.flag = "--class";
    out.nodes = query.nodesOfClass(*c);
    d.kind = Kind::kClass;
    d.text = *c;
  } else if (const std::string* cat = args.option("--category")) {
    out.flag = "--category";
    out.nodes = query.nodesOfCategory(*cat);
    d.kind = Kind::kCategory;
    d.text = *cat;
  } else if (const std::string* re = args.option("--pattern")) {
    out.flag = "--pattern";
    out.nodes = query.nodesMatching(*re);
    d.kind = Kind::kPattern;
    d.text = *re;
  } else {
    out.flag = "--below";
    out.nodes = query.nodesBelowConfidence(below);
    d.kind = Kind::kBelow;
    d.confidence = below;
  }
  return out;
}

}  // namespace

int RunQueryCommand(int argc, char** argv) {
  CommandLine command_line(
      kTool, "semmap query MODEL.onnx [--manifest MANIFEST.json] SELECTOR [--json | --count]",
      "Lists the nodes (id, op type, module, confidence, strategy; tab-separated)\n"
      "chosen by exactly one SELECTOR. Layer containers are found from the\n"
      "manifest's shape: modules whose children are numbered modules of one class\n"
      "(encoder.layer.0..N, h.0..N).\n",
      "Exit codes: 0 ok (also for an empty result), 1 no such module, class or\n"
      "layer, 2 bad usage, input or pattern.\n");
  AddQueryOptions(command_line);
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  std::int64_t layer = 0;
  if (const std::string* n = args->option("--layer")) {
    if (!absl::SimpleAtoi(*n, &layer)) {
      return command_line.UsageError(absl::StrCat("--layer needs an integer, got \"", *n, "\""));
    }
  }
  double below = 0;
  if (const std::string* c = args->option("--below")) {
    if (!absl::SimpleAtod(*c, &below) || !(below >= 0 && below <= 1)) {
      return command_line.UsageError(
          absl::StrCat("--below needs a number from 0 to 1, got \"", *c, "\""));
    }
  }

  auto model = LoadWithProgress(RequestOf(*args, args->positional[0]));
  if (!model.ok()) return Fail(kTool, model.status());
  const semmap::SemanticQuery query(*(*model)->mapper);
  const bool json = args->has("--json");
  const bool count = args->has("--count");

  if (args->has("--empty-modules")) return PrintModules(**model, query.modulesWithoutNodes(), json, count);
  if (args->has("--containers")) return PrintContainers(**model, query, json, count);
  Selection selection = SelectNodes(query, *args, layer, below);
  if (!selection.nodes.ok()) {
    return QueryFailure(**model, selection.flag, selection.nodes.status());
  }
  return PrintNodes(**model, selection.description, *selection.nodes, json, count);
}

}  // namespace semmap_cli
