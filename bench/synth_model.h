// A synthetic, transformer-shaped ONNX export for benchmarks: a Llama-style
// decoder stack named the way torch's TorchScript exporter names nodes
// ("/model/layers.N/self_attn/q_proj/MatMul"), with unscoped Constant_N and
// Identity_N nodes, and the matching semmap manifest (schema v1).
//
// The ONNX file is hand-encoded in the protobuf wire format and streamed to
// disk, so it may exceed protobuf's 2 GB message limit.
#ifndef SEMMAP_BENCH_SYNTH_MODEL_H_
#define SEMMAP_BENCH_SYNTH_MODEL_H_

#include <cstdint>
#include <string>

namespace semmap_bench {

struct SynthOptions {
  std::uint64_t nodes = 10000;        // exact node count of the graph
  std::uint64_t weight_bytes = 0;     // total raw_data of the weights (0: tiny)
};

struct SynthResult {
  std::uint64_t nodes = 0;
  std::uint64_t layers = 0;
  std::uint64_t modules = 0;
  std::uint64_t model_bytes = 0;
};

// Writes `model_path` and `manifest_path`; false with `*error` on I/O failure.
bool WriteSynthetic(const SynthOptions& options, const std::string& model_path,
                    const std::string& manifest_path, SynthResult* result, std::string* error);

}  // namespace semmap_bench

#endif  // SEMMAP_BENCH_SYNTH_MODEL_H_
