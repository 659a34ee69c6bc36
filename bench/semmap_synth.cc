// semmap_synth: writes a synthetic transformer-shaped ONNX model and its
// manifest for benchmarks (see synth_model.h).
//
//   semmap_synth --nodes N [--weight-mb M] OUT_DIR
//
// Writes OUT_DIR/model.onnx and OUT_DIR/manifest.json and prints one JSON
// line describing them. Exit codes: 0 ok, 2 bad usage or I/O failure.
#include <cstdlib>
#include <iostream>
#include <string>

#include "synth_model.h"

int main(int argc, char** argv) {
  semmap_bench::SynthOptions options;
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--nodes" && i + 1 < argc) {
      options.nodes = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--weight-mb" && i + 1 < argc) {
      options.weight_bytes = std::strtoull(argv[++i], nullptr, 10) << 20;
    } else if (!arg.empty() && arg[0] != '-' && dir.empty()) {
      dir = arg;
    } else {
      std::cerr << "usage: semmap_synth --nodes N [--weight-mb M] OUT_DIR\n";
      return 2;
    }
  }
  if (dir.empty() || options.nodes == 0) {
    std::cerr << "usage: semmap_synth --nodes N [--weight-mb M] OUT_DIR\n";
    return 2;
  }
  semmap_bench::SynthResult result;
  std::string error;
  if (!semmap_bench::WriteSynthetic(options, dir + "/model.onnx", dir + "/manifest.json", &result,
                                    &error)) {
    std::cerr << "semmap_synth: " << error << "\n";
    return 2;
  }
  std::cout << "{\"nodes\":" << result.nodes << ",\"layers\":" << result.layers
            << ",\"modules\":" << result.modules << ",\"model_bytes\":" << result.model_bytes
            << "}\n";
  return 0;
}
