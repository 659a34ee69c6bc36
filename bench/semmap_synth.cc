// semmap_synth: writes a synthetic transformer-shaped ONNX model and its
// manifest for benchmarks (see synth_model.h).
//
//   semmap_synth --nodes N [--weight-mb M] [--shape llama|moe] [--experts E]
//                [--forward] OUT_DIR
//
// Writes OUT_DIR/model.onnx and OUT_DIR/manifest.json (schema 1), with
// --forward also OUT_DIR/manifest-forward.json (the same modules, schema 2:
// forward signatures), and prints one JSON line describing them.
// Exit codes: 0 ok, 2 bad usage or I/O failure.
#include <cstdlib>
#include <iostream>
#include <string>

#include "synth_model.h"

namespace {

int Usage() {
  std::cerr << "usage: semmap_synth --nodes N [--weight-mb M] [--shape llama|moe] [--experts E]"
               " [--forward] OUT_DIR\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  semmap_bench::SynthOptions options;
  std::string dir;
  bool forward = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--nodes" && i + 1 < argc) {
      options.nodes = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--weight-mb" && i + 1 < argc) {
      options.weight_bytes = std::strtoull(argv[++i], nullptr, 10) << 20;
    } else if (arg == "--shape" && i + 1 < argc) {
      const std::string shape = argv[++i];
      if (shape == "llama") {
        options.shape = semmap_bench::SynthShape::kLlama;
      } else if (shape == "moe") {
        options.shape = semmap_bench::SynthShape::kMoe;
      } else {
        return Usage();
      }
    } else if (arg == "--experts" && i + 1 < argc) {
      options.experts = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--forward") {
      forward = true;
    } else if (!arg.empty() && arg[0] != '-' && dir.empty()) {
      dir = arg;
    } else {
      return Usage();
    }
  }
  if (dir.empty() || options.nodes == 0 || options.experts == 0) return Usage();
  semmap_bench::SynthResult result;
  std::string error;
  if (!semmap_bench::WriteSynthetic(options, dir + "/model.onnx", dir + "/manifest.json",
                                    forward ? dir + "/manifest-forward.json" : std::string(),
                                    &result, &error)) {
    std::cerr << "semmap_synth: " << error << "\n";
    return 2;
  }
  std::cout << "{\"nodes\":" << result.nodes << ",\"layers\":" << result.layers
            << ",\"modules\":" << result.modules << ",\"model_bytes\":" << result.model_bytes
            << ",\"shape\":\""
            << (options.shape == semmap_bench::SynthShape::kMoe ? "moe" : "llama") << "\"";
  if (options.shape == semmap_bench::SynthShape::kMoe) {
    std::cout << ",\"experts\":" << options.experts;
  }
  if (forward) {
    std::cout << ",\"forward_modules\":" << result.forward_modules
              << ",\"forward_events\":" << result.forward_events;
  }
  std::cout << "}\n";
  return 0;
}
