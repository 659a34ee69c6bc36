// semmap-query: which HuggingFace module produced each ONNX node.
//
//   semmap-query MODEL.onnx [--manifest MANIFEST.json] [--node NAME]
//                [--depth N] [--json]
//
// The same command as `semmap map`; both run semmap_cli::RunMap.
// Exit codes: 0 success, 1 the --node does not exist, 2 bad usage or input.
#include "map_command.h"
#include "standard_output.h"

int main(int argc, char** argv) {
  return semmap_cli::RunWithStandardOutput(
      "semmap-query", [](int n, char** args) { return semmap_cli::RunMap("semmap-query", n, args); },
      argc, argv);
}
