// Synthetic, transformer-shaped ONNX exports for benchmarks, named the way
// torch's TorchScript exporter names nodes
// ("/model/layers.N/self_attn/q_proj/MatMul"), with unscoped Constant_N and
// Identity_N nodes, and the matching semmap manifest.
//
// Two shapes:
//   kLlama  a Llama-style decoder stack (attention, gated MLP, RMS norms);
//   kMoe    a Mixtral-style mixture of experts: the same attention, then per
//           layer a router (`block_sparse_moe.gate`) and `experts` sibling
//           expert MLPs (`block_sparse_moe.experts.E.{w1,w2,w3,act_fn}`),
//           each reached through routing nodes of the block.
//
// The manifest is schema version 1. With `forward_manifest_path` the same
// model's manifest is also written as schema version 2: a `forward` list
// on every module that runs (docs/manifest.md), modelled on what the
// exporter records for transformers' Llama and Mixtral code: each module
// calls its children in order and runs a few ops, reading its own weights.
// As the real writer, a forward of more than 10,000 events (LlamaModel's,
// above 10,000 layers) is left out, and ModuleLists, never called, have none.
//
// The ONNX file is hand-encoded in the protobuf wire format and streamed to
// disk, so it may exceed protobuf's 2 GB message limit.
#ifndef SEMMAP_BENCH_SYNTH_MODEL_H_
#define SEMMAP_BENCH_SYNTH_MODEL_H_

#include <cstdint>
#include <string>

namespace semmap_bench {

enum class SynthShape { kLlama, kMoe };

struct SynthOptions {
  std::uint64_t nodes = 10000;     // exact node count of the graph
  std::uint64_t weight_bytes = 0;  // total raw_data of the Linear weights (0: tiny)
  SynthShape shape = SynthShape::kLlama;
  std::uint64_t experts = 64;      // kMoe: expert MLPs per layer
};

struct SynthResult {
  std::uint64_t nodes = 0;
  std::uint64_t layers = 0;
  std::uint64_t modules = 0;
  std::uint64_t model_bytes = 0;
  std::uint64_t forward_modules = 0;  // modules with a `forward` (schema 2 file)
  std::uint64_t forward_events = 0;   // events of all of them
};

// Writes `model_path` and `manifest_path` (schema 1) and, unless
// `forward_manifest_path` is empty, the schema 2 manifest of the same
// model; false with `*error` on I/O failure.
bool WriteSynthetic(const SynthOptions& options, const std::string& model_path,
                    const std::string& manifest_path, const std::string& forward_manifest_path,
                    SynthResult* result, std::string* error);

}  // namespace semmap_bench

#endif  // SEMMAP_BENCH_SYNTH_MODEL_H_
