// The manifest of a synthetic export (synth_model.h): the module tree of
// the Llama- or Mixtral-shaped model the graph was written for, as schema
// version 1, or version 2 with forward signatures.
#ifndef SEMMAP_BENCH_SYNTH_MANIFEST_H_
#define SEMMAP_BENCH_SYNTH_MANIFEST_H_

#include <cstdint>
#include <string>

#include "synth_model.h"

namespace semmap_bench {

// What the graph writer decided that the manifest must agree with.
struct SynthModules {
  SynthShape shape = SynthShape::kLlama;
  std::uint64_t layers = 0;
  std::uint64_t experts = 0;             // kMoe: experts per layer
  std::uint64_t last_layer_experts = 0;  // kMoe: those of the last layer the node count reached
  std::int64_t hidden = 8;        // every weight's input width
  std::int64_t linear_out = 8;    // a Linear's output width (padded with the payload)
};

struct ManifestCounts {
  std::uint64_t modules = 0;
  std::uint64_t forward_modules = 0;
  std::uint64_t forward_events = 0;
};

// The manifest's JSON text, with a final newline. `forward`: schema
// version 2, a `forward` list on every module that runs.
std::string SynthManifestJson(const SynthModules& m, bool forward, ManifestCounts* counts);

}  // namespace semmap_bench

#endif  // SEMMAP_BENCH_SYNTH_MANIFEST_H_
