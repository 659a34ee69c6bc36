// semmap-eval: measure semmap's mappings against a ground-truth file.
//
//   semmap-eval MODEL.onnx [--manifest MANIFEST.json] --truth TRUTH.json
//               [--reference ORIGINAL.onnx] [--json] [--errors N]
//
// TRUTH.json is {"nodes": {"<node id>": "<module path>", ...},
// "unknown": [...]} as written by the fixture corpus tools.
// Exit codes: 0 success, 2 bad usage or input.
#include <algorithm>
#include <array>
#include <iomanip>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli_util.h"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"
#include "standard_output.h"

namespace {

constexpr char kTool[] = "semmap-eval";
struct Bucket {
  double lo, hi;
  std::size_t count = 0, correct = 0;
};

// Every node's answer against the truth.
struct Tally {
  std::size_t nodes = 0, known = 0, correct = 0, covered = 0;
  std::array<std::size_t, semmap::kStrategyCount> by_strategy{}, by_strategy_correct{};
  std::vector<Bucket> buckets = {{0.9, 1.0}, {0.7, 0.9}, {0.5, 0.7}, {0.0, 0.5}};
  std::vector<std::string> errors;  // the first `max_errors` wrong answers
  // Fused nodes: those the truth gives origins, those listed with the same
  // set, and nodes given origins the truth does not list.
  std::size_t fused = 0, origins_exact = 0, origins_listed = 0, origins_spurious = 0;

  double accuracy() const { return known ? static_cast<double>(correct) / known : 0.0; }
  double coverage() const { return nodes ? static_cast<double>(covered) / nodes : 0.0; }
};

Tally Evaluate(const semmap::SemanticMapper& mapper, const semmap::GroundTruth& truth,
               int max_errors) {
  const semmap::Graph& graph = mapper.graph();
  Tally t;
  t.nodes = graph.size();
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(graph.size()); ++i) {
    const semmap::Mapping m = mapper.moduleFor(i);
    if (m.confidence > 0) ++t.covered;
    const std::string* expected = truth.find(graph.node(i).id);
    if (expected == nullptr) continue;
    std::vector<std::string> listed;
    for (absl::string_view o : mapper.originPathsOf(i)) listed.emplace_back(o);
    std::sort(listed.begin(), listed.end());
    t.origins_listed += !listed.empty();
    if (const std::vector<std::string>* parts = truth.originsOf(graph.node(i).id)) {
      ++t.fused;
      t.origins_exact += listed == *parts;
    } else {
      t.origins_spurious += !listed.empty();
    }
    ++t.known;
    const bool ok = m.mapped() && m.module_path == *expected;
    t.correct += ok;
    const auto s = static_cast<std::size_t>(m.strategy);
    ++t.by_strategy[s];
    t.by_strategy_correct[s] += ok;
    for (Bucket& b : t.buckets) {
      if (m.confidence >= b.lo && (m.confidence < b.hi || (b.hi == 1.0 && m.confidence <= 1.0))) {
        ++b.count;
        b.correct += ok;
        break;
      }
    }
    if (!ok && static_cast<int>(t.errors.size()) < max_errors) {
      t.errors.push_back(absl::StrCat(graph.node(i).id, " [", graph.node(i).op_type,
                                      "]: expected \"", *expected, "\", got \"",
                                      m.mapped() ? std::string(m.module_path) : "(unmapped)",
                                      "\" (", semmap::StrategyName(m.strategy), " ",
                                      m.confidence, ": ", m.evidence, ")"));
    }
  }
  return t;
}

// One line per node the truth knows: strategy, confidence, right (1) or not.
void PrintAnswers(const semmap::SemanticMapper& mapper, const semmap::GroundTruth& truth) {
  const semmap::Graph& graph = mapper.graph();
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(graph.size()); ++i) {
    const std::string* expected = truth.find(graph.node(i).id);
    if (expected == nullptr) continue;
    const semmap::Mapping m = mapper.moduleFor(i);
    std::cout << semmap::StrategyName(m.strategy) << '\t' << m.confidence << '\t'
              << (m.mapped() && m.module_path == *expected ? 1 : 0) << '\n';
  }
}

void PrintJson(const Tally& t, const std::string& model) {
  nlohmann::json j;
  j["model"] = model;
  j["nodes"] = t.nodes;
  j["known"] = t.known;
  j["correct"] = t.correct;
  j["accuracy"] = t.accuracy();
  j["coverage"] = t.coverage();
  nlohmann::json strategies = nlohmann::json::object();
  for (std::size_t s = 0; s < semmap::kStrategyCount; ++s) {
    if (t.by_strategy[s] == 0) continue;
    strategies[std::string(semmap::StrategyName(static_cast<semmap::Strategy>(s)))] = {
        {"count", t.by_strategy[s]},
        {"correct", t.by_strategy_correct[s]},
        {"accuracy", static_cast<double>(t.by_strategy_correct[s]) / t.by_strategy[s]}};
  }
  j["strategies"] = strategies;
  nlohmann::json cal = nlohmann::json::array();
  for (const Bucket& b : t.buckets) {
    cal.push_back({{"lo", b.lo}, {"hi", b.hi}, {"count", b.count}, {"correct", b.correct}});
  }
  j["calibration"] = cal;
  j["origins"] = {{"fused", t.fused},
                  {"exact", t.origins_exact},
                  {"listed", t.origins_listed},
                  {"spurious", t.origins_spurious}};
  std::cout << semmap_cli::DumpJson(j, -1) << "\n";
}

void PrintText(const Tally& t) {
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
  for (const Bucket& b : t.buckets) {
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
      "                   [--reference ORIGINAL.onnx] [--rules RULES.json]\n"
      "                   [--json] [--errors N] [--answers]",
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
  command_line.Input("--rules", "RULES.json",
                     "map with this rule file instead of the default rules\n"
                     "(rules/default.json; docs/rules.md)");
  command_line.Flag("--json", "machine-readable output");
  command_line.Flag("--answers",
                    "print one line per node the truth knows instead:\n"
                    "strategy, confidence, 1 if right else 0 (tab-separated;\n"
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
  const Tally tally = Evaluate(*mapper, *truth, max_errors);
  if (args->has("--json")) {
    PrintJson(tally, args->positional[0]);
  } else {
    PrintText(tally);
  }
  return semmap_cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return semmap_cli::RunWithStandardOutput(kTool, RunEval, argc, argv);
}
