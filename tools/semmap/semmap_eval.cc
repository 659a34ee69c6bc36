// semmap-eval: measure semmap's mappings against a ground-truth file.
//
//   semmap-eval MODEL.onnx [--manifest MANIFEST.json] --truth TRUTH.json
//               [--reference ORIGINAL.onnx] [--json] [--errors N]
//
// TRUTH.json is {"nodes": {"<node id>": "<module path>", ...},
// "unknown": [...]} as written by the fixture corpus tools.
// Exit codes: 0 success, 2 bad usage or input.
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "cli_util.h"
#include "loaded_model.h"
#include "semmap/semmap.h"
#include "standard_output.h"

namespace {

constexpr char kTool[] = "semmap-eval";

// One line per node the truth knows: strategy, confidence, right (1) or not.
void PrintAnswers(const semmap::SemanticMapper& mapper, const semmap::GroundTruth& truth) {
  const semmap::Graph& graph = mapper.graph();
  const absl::string_view kind = semmap::GraphKindName(mapper.graphKind());
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(graph.size()); ++i) {
    const std::string* expected = truth.find(graph.node(i).id);
    if (expected == nullptr) continue;
    const semmap::Mapping m = mapper.moduleFor(i);
    std::cout << semmap::StrategyName(m.strategy) << '\t' << m.confidence << '\t'
              << (m.mapped() && m.module_path == *expected ? 1 : 0) << '\t' << kind << '\n';
  }
}

void PrintText(const semmap::TruthScore& t) {
  std::cout << std::fixed << std::setprecision(2);
  std::cout << "nodes:     " << t.nodes << "\n"
            << "known:     " << t.known << "\n"
            << "correct:   " << t.correct << "\n"
            << "accuracy:  " << 100.0 * t.accuracy() << "%\n"
            << "coverage:  " << 100.0 * t.coverage() << "% (confidence > 0)\n"
            << "per strategy:\n";
  for (std::size_t s = 0; s < semmap::kStrategyCount; ++s) {
    if (t.by_strategy[s] == 0) continue;
    std::cout << "  " << std::left << std::setw(18)
              << semmap::StrategyName(static_cast<semmap::Strategy>(s)) << std::right
              << std::setw(7) << t.by_strategy_correct[s] << " / " << std::setw(7)
              << t.by_strategy[s] << "  " << 100.0 * t.by_strategy_correct[s] / t.by_strategy[s]
              << "%\n";
  }
  std::cout << "calibration (confidence bucket: correct / answers):\n";
  for (const semmap::ConfidenceBucket& b : t.buckets) {
    std::cout << "  [" << b.lo << ", " << b.hi << (b.hi == 1.0 ? "]" : ")") << "  "
              << b.correct << " / " << b.count;
    if (b.count) std::cout << "  " << 100.0 * b.correct / b.count << "%";
    std::cout << "\n";
  }
  std::cout << "origins:   " << t.origins_exact << " / " << t.fused
            << " fused nodes listed exactly; " << t.origins_spurious
            << " nodes listed that the truth does not fuse\n";
  for (const std::string& e : t.errors) std::cout << "wrong: " << e << "\n";
}

int RunEval(int argc, char** argv) {
  semmap_cli::CommandLine command_line(
      kTool,
      "semmap-eval MODEL.onnx [--manifest MANIFEST.json] --truth TRUTH.json\n"
      "                   [--reference ORIGINAL.onnx] [--no-record]\n"
      "                   [--rules RULES.json] [--json] [--errors N] [--answers]",
      "Compares semmap's mapping of every node with a ground-truth file and prints\n"
      "accuracy, coverage, per-strategy accuracy and calibration.\n",
      "Exit codes: 0 ok, 2 bad usage or input.\n");
  command_line.Input("--manifest", "MANIFEST.json", "the module manifest of the model");
  command_line.Input("--truth", "TRUTH.json", "the ground truth: node id -> module path")
      ->required();
  command_line.Value("--errors", "N", "also list up to N wrong answers (text mode; default 0)");
  command_line.Input("--reference", "ORIGINAL.onnx",
                     "the unprocessed export MODEL.onnx was made from:\n"
                     "its mapping is carried over (refused, exit 2, when it is not)");
  command_line.Flag("--no-record", semmap_cli::kNoRecordHelp);
  command_line.Input("--rules", "RULES.json",
                     "map with this rule file instead of the default rules\n"
                     "(rules/default.json; docs/rules.md)");
  command_line.Flag("--json", "machine-readable output");
  command_line.Flag("--answers",
                    "print one line per node the truth knows instead:\n"
                    "strategy, confidence, 1 if right else 0, the graph's kind\n"
                    "(named, unnamed, quantized: docs/rules.md; tab-separated;\n"
                    "what scripts/fit-calibration reads)");
  command_line.Positionals(1, 1, "expected MODEL.onnx and --truth TRUTH.json");
  int exit_code = semmap_cli::kExitOk;
  std::optional<semmap_cli::Args> args = command_line.Parse(argc, argv, &exit_code);
  if (!args) return exit_code;
  const std::string* truth_path = args->option("--truth");
  int max_errors = 0;
  if (const std::string* e = args->option("--errors")) {
    if (!absl::SimpleAtoi(*e, &max_errors) || max_errors < 0) {
      return command_line.UsageError("--errors needs a non-negative integer");
    }
  }
  const std::string* manifest_path = args->option("--manifest");
  semmap::SemanticMapper::OpenOptions options;
  if (const std::string* reference = args->option("--reference")) {
    options.reference_path = *reference;
  }
  if (const std::string* rules = args->option("--rules")) options.rules_path = *rules;
  options.use_record = !args->has("--no-record");
  auto mapper = semmap::SemanticMapper::Open(args->positional[0],
                                             manifest_path ? *manifest_path : "", options);
  if (!mapper.ok()) return semmap_cli::Fail(kTool, mapper.status());
  for (const std::string& warning : mapper->referenceCheck().warnings) {
    std::cerr << kTool << ": warning: reference "
              << semmap_cli::EscapeControls(options.reference_path) << ": " << warning << "\n";
  }
  auto truth = semmap::GroundTruth::Load(*truth_path);
  if (!truth.ok()) return semmap_cli::Fail(kTool, truth.status());
  if (args->has("--answers")) {
    PrintAnswers(*mapper, *truth);
    return semmap_cli::kExitOk;
  }
  const semmap::TruthScore score =
      semmap::ScoreAgainstTruth(*mapper, *truth, static_cast<std::size_t>(max_errors));
  if (args->has("--json")) {
    std::cout << semmap::TruthScoreJson(score, args->positional[0]) << "\n";
  } else {
    PrintText(score);
  }
  return semmap_cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return semmap_cli::RunWithStandardOutput(kTool, RunEval, argc, argv);
}
