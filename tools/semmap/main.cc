// semmap: map ONNX nodes to the HuggingFace modules that produced them, and
// query, summarise, annotate or export the result.
//
//   semmap map      MODEL.onnx [--manifest M] [--node NAME] [--depth N] [--json]
//   semmap query    MODEL.onnx --manifest M (--module P [--subtree] | --layer N ...)
//   semmap tree     MODEL.onnx --manifest M [--model-specific] [--json]
//   semmap annotate MODEL.onnx --manifest M -o OUT.onnx
//   semmap embed    MODEL.onnx --manifest M -o OUT.onnx [--source EXPORT.onnx]
//   semmap sidecar  MODEL.onnx --manifest M [-o OUT.json]
//   semmap diff     A.onnx B.onnx --manifest M [--manifest-b MB] [--json]
//   semmap extract  MODEL.onnx --manifest M --module P -o OUT.onnx
//   semmap report   MODEL.onnx --manifest M -o REPORT.html
//   semmap profile  MODEL.onnx --ort-profile PROFILE.json [--manifest M] [--json]
//   semmap graphml  MODEL.onnx [--manifest M] -o OUT.graphml [--depth N]
//   semmap node-data MODEL.onnx [--manifest M] -o OUT.json [--value time --ort-profile P]
//
// Exit codes: 0 ok, 1 not found (node, module, class, layer), 2 bad usage
// or input.
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "commands.h"
#include "map_command.h"
#include "standard_output.h"
#include "semmap/version.h"

namespace {

constexpr char kUsage[] =
    "usage: semmap COMMAND MODEL.onnx [--manifest MANIFEST.json] [options]\n"
    "\n"
    "Maps every ONNX node to the PyTorch / HuggingFace module that produced it.\n"
    "Commands:\n"
    "  map       summary of the mapping, or one node's mapping (--node)\n"
    "  query     nodes of a module, a layer, a class, a path pattern; empty\n"
    "            modules; low-confidence nodes\n"
    "  tree      module hierarchy with node, op and parameter counts\n"
    "  annotate  copy of the model with module@semmap etc. metadata on every node\n"
    "  embed     copy of the model carrying its own provenance record, so that\n"
    "            processed copies map with no other file\n"
    "  sidecar   JSON file with every node's mapping and the module tree\n"
    "  diff      two exports of one model compared module by module\n"
    "  extract   one module's nodes as a standalone ONNX model\n"
    "  report    self-contained HTML page: module tree, search, node mappings\n"
    "  profile   ONNX Runtime profile's kernel time by module, layer, class\n"
    "  graphml   GraphML with modules as nested graphs (yEd, Gephi, networkx)\n"
    "  node-data Model Explorer node data: confidence or profiled time per node\n"
    "Run `semmap COMMAND --help` (or `semmap help COMMAND`) for a command's options;\n"
    "`semmap --version` (-V) prints the version. Documentation: share/doc/semmap\n"
    "under the installation's prefix (for pip, the environment's: python -c\n"
    "'import sys; print(sys.prefix)').\n"
    "Exit codes: 0 ok, 1 not found, 2 bad usage or input.\n";

int RunCommand(int argc, char** argv);

int Dispatch(const std::string& command, int sub_argc, char** sub_argv);

}  // namespace

// A command's output is its result: a failed write must not exit 0, but a
// reader that went away (`| head`) ends the tool quietly (standard_output.h).
int main(int argc, char** argv) {
  return semmap_cli::RunWithStandardOutput("semmap", RunCommand, argc, argv);
}

namespace {

int RunCommand(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "semmap: missing command\n" << kUsage;
    return semmap_cli::kExitBadInput;
  }
  const std::string command = argv[1];
  if (command == "help" && argc > 2 && std::string(argv[2]) != "help") {
    // `semmap help COMMAND` is `semmap COMMAND --help`.
    char help_flag[] = "--help";
    char* sub[] = {argv[2], help_flag, nullptr};
    return Dispatch(argv[2], 2, sub);
  }
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return semmap_cli::kExitOk;
  }
  if (command == "--version" || command == "-V") {
    std::cout << "semmap " << SEMMAP_VERSION_STRING << "\n";
    return semmap_cli::kExitOk;
  }
  // Subcommands see their own name as argv[0].
  return Dispatch(command, argc - 1, argv + 1);
}

int Dispatch(const std::string& command, int sub_argc, char** sub_argv) {
  if (command == "map") return semmap_cli::RunMap("semmap map", sub_argc, sub_argv,
                                                  semmap_cli::LoadWithProgress);
  if (command == "query") return semmap_cli::RunQueryCommand(sub_argc, sub_argv);
  if (command == "tree") return semmap_cli::RunTreeCommand(sub_argc, sub_argv);
  if (command == "annotate") return semmap_cli::RunAnnotateCommand(sub_argc, sub_argv);
  if (command == "embed") return semmap_cli::RunEmbedCommand(sub_argc, sub_argv);
  if (command == "sidecar") return semmap_cli::RunSidecarCommand(sub_argc, sub_argv);
  if (command == "diff") return semmap_cli::RunDiffCommand(sub_argc, sub_argv);
  if (command == "extract") return semmap_cli::RunExtractCommand(sub_argc, sub_argv);
  if (command == "report") return semmap_cli::RunReportCommand(sub_argc, sub_argv);
  if (command == "profile") return semmap_cli::RunProfileCommand(sub_argc, sub_argv);
  if (command == "graphml") return semmap_cli::RunGraphmlCommand(sub_argc, sub_argv);
  if (command == "node-data") return semmap_cli::RunNodeDataCommand(sub_argc, sub_argv);
  if (command == "compare-numerics") {
    // Runs ONNX Runtime, which the library and this tool never link.
    std::cerr << "semmap: compare-numerics runs ONNX Runtime and lives in the Python package:\n"
                 "  pip install 'semmap[onnxruntime]'\n"
                 "  semmap compare-numerics REFERENCE.onnx DEPLOYED.onnx [--manifest M]\n"
                 "(the `semmap` command pip installs runs it; docs/numerics.md)\n";
    return semmap_cli::kExitBadInput;
  }
  semmap_cli::Fail("semmap",
                   absl::InvalidArgumentError(absl::StrCat("unknown command \"", command, "\"")));
  std::cerr << kUsage;
  return semmap_cli::kExitBadInput;
}

}  // namespace
