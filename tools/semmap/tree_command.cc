// semmap tree: the module hierarchy with node, op and parameter counts.
#include <algorithm>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "commands.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kTool[] = "semmap tree";
// "74.5k", "1.2M": parameter counts read at a glance.
std::string Compact(std::int64_t n) {
  if (n < 1000) return absl::StrCat(n);
  const char* units[] = {"k", "M", "G", "T"};
  double v = static_cast<double>(n);
  int unit = -1;
  while (v >= 1000 && unit < 3) {
    v /= 1000;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, v < 10 ? "%.1f%s" : "%.0f%s", v, units[unit]);
  return buffer;
}

std::string TopOps(const std::map<std::string, std::size_t>& ops, int k) {
  std::vector<std::pair<std::string, std::size_t>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (int i = 0; i < k && i < static_cast<int>(sorted.size()); ++i) {
    absl::StrAppend(&out, i ? " " : "", sorted[i].first, ":", sorted[i].second);
  }
  if (static_cast<int>(sorted.size()) > k && k > 0) absl::StrAppend(&out, " ...");
  return out;
}

// Whether `m` and its subtree are printed.
bool Shown(const semmap::TreeModule& m, int max_depth, bool nonempty) {
  if (nonempty && m.subtree_nodes == 0) return false;
  return max_depth < 0 || m.depth <= max_depth;
}

void PrintModule(const semmap::ModuleTree& tree, const semmap::TreeModule& m, int ops) {
  const semmap::ModuleInfo& info = tree.info(m);
  std::string line = absl::StrCat(std::string(2 * m.depth, ' '),
                                  info.path.empty() ? "<root>" : info.path);
  if (!info.class_name.empty()) absl::StrAppend(&line, " (", info.class_name, ")");
  absl::StrAppend(&line, "  ", m.subtree_nodes, m.subtree_nodes == 1 ? " node" : " nodes");
  if (m.own_nodes != m.subtree_nodes) absl::StrAppend(&line, " (", m.own_nodes, " own)");
  if (m.subtree_parameters > 0) absl::StrAppend(&line, ", ", Compact(m.subtree_parameters), " params");
  if (ops > 0 && !m.subtree_op_types.empty()) {
    absl::StrAppend(&line, "  [", TopOps(m.subtree_op_types, ops), "]");
  }
  // Names come from the files: escaped, so that none forges a line or
  // reaches the terminal as a control sequence.
  std::cout << EscapeControls(line) << "\n";
}

// Pre-order, which modules() already is; skipping a hidden module's subtree
// keeps the walk iterative, so any depth prints without deep recursion.
void PrintTree(const semmap::ModuleTree& tree, int max_depth, bool nonempty, int ops) {
  const std::vector<semmap::TreeModule>& modules = tree.modules();
  std::vector<bool> hidden(modules.size(), false);
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const semmap::TreeModule& m = modules[i];
    if ((m.parent >= 0 && hidden[static_cast<std::size_t>(m.parent)]) ||
        !Shown(m, max_depth, nonempty)) {
      hidden[i] = true;
      continue;
    }
    PrintModule(tree, m, ops);
  }
}

int ParseCount(const CommandLine& command_line, const std::string* text, const char* name,
               int fallback, int* out) {
  *out = fallback;
  if (text == nullptr) return kExitOk;
  if (!absl::SimpleAtoi(*text, out) || *out < 0 || *out > 1000) {
    return command_line.UsageError(
        absl::StrCat(name, " needs an integer from 0 to 1000, got \"", *text, "\""));
  }
  return kExitOk;
}

}  // namespace

int RunTreeCommand(int argc, char** argv) {
  CommandLine command_line(
      kTool,
      "semmap tree MODEL.onnx [--manifest MANIFEST.json] [--model-specific]\n"
      "                   [--depth N] [--nonempty] [--ops K] [--json]",
      "Prints the module hierarchy: per module its class, nodes in its subtree (and\n"
      "its own), parameters in its subtree, and its subtree's most frequent op types.\n",
      "Exit codes: 0 ok, 2 bad usage or input.\n");
  command_line.Flag("--model-specific",
                    "fold torch.nn leaf modules (Linear, LayerNorm, Dropout...)\n"
                    "into their parents: the model's own architecture");
  command_line.Value("--depth", "N", "show modules down to depth N (root = 0; default: all)");
  command_line.Flag("--nonempty", "hide modules with no node in their subtree");
  command_line.Value("--ops", "K", "op types shown per module (default 3, 0 = none)");
  command_line.Flag("--json",
                    "the tree as the sidecar's \"tree\" member\n(share/doc/semmap/sidecar.md)");
  int exit_code = 0;
  auto args = ParseCommandArgs(command_line, argc, argv, &exit_code);
  if (!args) return exit_code;
  int depth = -1, ops = 3;
  if (args->option("--depth") &&
      ParseCount(command_line, args->option("--depth"), "--depth", -1, &depth) != kExitOk) {
    return kExitBadInput;
  }
  if (ParseCount(command_line, args->option("--ops"), "--ops", 3, &ops) != kExitOk) return kExitBadInput;

  auto model = LoadWithProgress(RequestOf(*args, args->positional[0]));
  if (!model.ok()) return Fail(kTool, model.status());
  const semmap::SemanticMapper& mapper = *(*model)->mapper;
  const bool model_specific = args->has("--model-specific");
  if (args->has("--json")) {
    std::cout << semmap::ModuleTreeJson(mapper, model_specific, 2);
    return kExitOk;
  }
  semmap::TreeOptions options;
  options.model_specific_only = model_specific;
  const semmap::ModuleTree tree = semmap::ModuleTree::Build(mapper, options);
  PrintTree(tree, depth, args->has("--nonempty"), ops);
  if (ops > 0 && !tree.subtreeOpTypesComplete()) {
    std::cout << "(subtree op types omitted: above " << options.max_op_type_entries
              << " histogram entries)\n";
  }
  if (tree.unmappedNodes() > 0) std::cout << "(unmapped)  " << tree.unmappedNodes() << " nodes\n";
  return kExitOk;
}

}  // namespace semmap_cli
