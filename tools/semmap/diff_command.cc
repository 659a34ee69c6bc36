// semmap diff: two exports of one model compared module by module.
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "commands.h"
#include "semmap/diff.h"
#include "semmap/semmap.h"

namespace semmap_cli {
namespace {

constexpr char kTool[] = "semmap diff";
// "+Attention:1 -MatMul:4": how the own op histogram changed.
std::string OpDelta(const semmap::ModuleDelta& m) {
  std::map<std::string, long> delta;
  for (const auto& [op, n] : m.ops_a) delta[op] -= static_cast<long>(n);
  for (const auto& [op, n] : m.ops_b) delta[op] += static_cast<long>(n);
  std::string out;
  for (const auto& [op, n] : delta) {
    if (n != 0) {
      absl::StrAppend(&out, out.empty() ? "" : " ", n > 0 ? "+" : "", n, " ", EscapeControls(op));
    }
  }
  return out;
}

std::string Histogram(const std::vector<semmap::DiffNode>& nodes) {
  std::map<std::string, std::size_t> ops;
  for (const semmap::DiffNode& n : nodes) ++ops[n.op_type];
  std::string out;
  for (const auto& [op, n] : ops) {
    absl::StrAppend(&out, out.empty() ? "" : " ", EscapeControls(op), ":", n);
  }
  return out;
}

std::string PathOrRoot(const std::string& path) {
  return path.empty() ? "<root>" : EscapeControls(path);
}

// Names, op types, classes and file names come from the files: each is
// escaped (EscapeControls), so that none can forge rows or reach the terminal.
void PrintText(const semmap::ModelDiff& d, const std::string& a, const std::string& b,
               bool all_modules) {
  std::cout << "A: " << EscapeControls(a) << "  " << d.nodes_a << " nodes  "
            << EscapeControls(d.model_class_a) << "\n"
            << "B: " << EscapeControls(b) << "  " << d.nodes_b << " nodes  "
            << EscapeControls(d.model_class_b) << "\n"
            << "nodes in both: " << d.common_nodes << "; module overlap "
            << static_cast<int>(100 * d.module_overlap + 0.5) << "%\n";
  std::size_t changed = 0;
  for (const semmap::ModuleDelta& m : d.modules) changed += m.changed() ? 1 : 0;
  std::cout << "\nmodules (own nodes A -> B, subtree A -> B): " << changed << " of "
            << d.modules.size() << " changed\n";
  for (const semmap::ModuleDelta& m : d.modules) {
    if (!all_modules && !m.changed()) continue;
    std::cout << "  " << PathOrRoot(m.path) << " (" << EscapeControls(m.class_name) << ")  "
              << m.own_a << " -> " << m.own_b << ", subtree " << m.subtree_a << " -> "
              << m.subtree_b;
    const std::string delta = OpDelta(m);
    if (!delta.empty()) std::cout << "  [" << delta << "]";
    std::cout << "\n";
  }
  std::cout << "\nmoved: " << d.moved.size() << " nodes\n";
  for (const semmap::MovedNode& m : d.moved) {
    std::cout << "  " << EscapeControls(m.a.key) << " (" << EscapeControls(m.a.op_type) << ")  "
              << (m.a.mapped ? PathOrRoot(m.a.module) : "<unmapped>") << " -> "
              << (m.b.mapped ? PathOrRoot(m.b.module) : "<unmapped>") << "\n";
  }
  std::size_t fused = 0;
  for (const semmap::FusionGroup& g : d.fusions) fused += g.fused.size();
  std::cout << "\nonly in B (new or fused): " << fused << " nodes in " << d.fusions.size()
            << " modules\n";
  if (d.common_nodes == 0) {
    std::cout << "  (no node names in common, as between exporters: compare the modules above)\n";
    return;
  }
  for (const semmap::FusionGroup& g : d.fusions) {
    std::cout << "  " << (g.mapped ? PathOrRoot(g.module) : "<unmapped>") << ": ";
    for (std::size_t i = 0; i < g.fused.size(); ++i) {
      std::cout << (i ? ", " : "") << EscapeControls(g.fused[i].op_type) << " "
                << EscapeControls(g.fused[i].name.empty() ? g.fused[i].key : g.fused[i].name);
    }
    std::cout << "\n    replaced " << g.replaced.size() << " nodes of A";
    if (!g.replaced.empty()) std::cout << ": " << Histogram(g.replaced);
    std::cout << "\n";
  }
  std::cout << "\nonly in A, not replaced (removed): " << d.removed.size() << " nodes";
  if (!d.removed.empty()) std::cout << ": " << Histogram(d.removed);
  std::cout << "\n";
}

}  // namespace

int RunDiffCommand(int argc, char** argv) {
  CommandLine command_line(
      kTool,
      "semmap diff A.onnx B.onnx [--manifest MANIFEST.json] [--manifest-b MANIFEST_B.json]\n"
      "                   [--all-modules] [--json]",
      "Maps both models and compares them module by module: nodes and op types\n"
      "per module, nodes that moved to another module, nodes only in B (fused by an\n"
      "optimizer) with the nodes only in A they replaced, nodes only in A (removed).\n"
      "Nodes are matched by name (unnamed or duplicated: op type and first output).\n",
      "Exit codes: 0 ok, 2 bad usage or input, or unrelated models (model classes\n"
      "differ, or under 10% of A's node-holding modules hold nodes in B).\n");
  command_line.Input("--manifest", "M", "manifest of A, and of B unless --manifest-b is given");
  command_line.Input("--manifest-b", "MB", "manifest of B");
  command_line.Flag("--all-modules", "list every module holding nodes, not only changed ones");
  command_line.Flag("--json", "the diff as JSON (format semmap.diff)");
  command_line.Flag("--allow-manifest-mismatch", "map even when a manifest does not fit its model");
  command_line.Positionals(2, 2, "expected A.onnx and B.onnx");
  int exit_code = 0;
  std::optional<Args> args = command_line.Parse(argc, argv, &exit_code);
  if (!args) return exit_code;
  const std::string* manifest_a = args->option("--manifest");
  const std::string* manifest_b = args->option("--manifest-b");
  if (manifest_b == nullptr) manifest_b = manifest_a;

  const bool allow_mismatch = args->has("--allow-manifest-mismatch");
  LoadRequest request_a{args->positional[0], manifest_a, nullptr, allow_mismatch,
                        !args->has("--json")};
  LoadRequest request_b{args->positional[1], manifest_b, nullptr, allow_mismatch,
                        !args->has("--json")};
  auto a = LoadWithProgress(request_a);
  if (!a.ok()) return Fail(kTool, a.status());
  auto b = LoadWithProgress(request_b);
  if (!b.ok()) return Fail(kTool, b.status());
  auto diff = semmap::DiffModels(*(*a)->mapper, *(*b)->mapper);
  if (!diff.ok()) {
    return Fail(kTool, absl::Status(diff.status().code(),
                                    absl::StrCat(args->positional[0], " vs ", args->positional[1],
                                                 ": ", diff.status().message())));
  }
  if (args->has("--json")) {
    std::cout << semmap::ModelDiffJson(*diff, args->has("--all-modules"));
  } else {
    PrintText(*diff, args->positional[0], args->positional[1], args->has("--all-modules"));
  }
  return kExitOk;
}

}  // namespace semmap_cli
