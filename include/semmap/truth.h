// GroundTruth: the node -> module answers an evaluation compares semmap's
// mappings with (semmap-eval, the fixture corpus tools).
//
//   absl::StatusOr<semmap::GroundTruth> truth = semmap::GroundTruth::Load("truth.json");
//   if (!truth.ok()) return truth.status();
//   const std::string* module = truth->find(graph.node(i).id);
//
// The file is {"nodes": {"<node id>": "<module path>", ...}, "unknown": [...]}
// and, optionally, "origins": {"<node id>": ["<module path>", ...]} for the
// nodes that do several modules' work; other members are ignored. It is read with the same guards as a manifest:
// a size limit, a nesting limit and no exception escaping. Immutable after
// loading and safe to share between threads.
#ifndef SEMMAP_INCLUDE_SEMMAP_TRUTH_H_
#define SEMMAP_INCLUDE_SEMMAP_TRUTH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/mapper.h"
#include "semmap/strategy.h"

namespace semmap {

struct SEMMAP_EXPORT TruthOptions {
  // Files above this size are refused (InvalidArgument).
  std::uint64_t max_file_bytes = std::uint64_t{1} << 30;
  // Nesting deeper than this is refused before parsing (InvalidArgument);
  // a truth file is two levels deep.
  int max_nesting = 16;
};

class SEMMAP_EXPORT GroundTruth {
 public:
  // Reads `path`. NotFound for a missing file; InvalidArgument for a
  // directory, a FIFO or device, a file above the limit, malformed JSON or a
  // wrong shape (with the JSON pointer); ResourceExhausted when memory runs
  // out. Messages start with the path.
  static absl::StatusOr<GroundTruth> Load(const std::string& path,
                                          const TruthOptions& options = {});
  // Parses `text`; errors as Load, naming `origin`.
  static absl::StatusOr<GroundTruth> Parse(absl::string_view text, absl::string_view origin,
                                           const TruthOptions& options = {});

  // The module path the truth gives node `id`, or nullptr when it has none.
  const std::string* find(absl::string_view id) const {
    auto it = modules_.find(id);
    return it == modules_.end() ? nullptr : &it->second;
  }
  std::size_t size() const { return modules_.size(); }
  // The origins the truth gives a fused node (its "origins": the modules
  // whose work it does, sorted), or nullptr for a node of one module.
  const std::vector<std::string>* originsOf(absl::string_view id) const {
    auto it = origins_.find(id);
    return it == origins_.end() ? nullptr : &it->second;
  }
  std::size_t fusedCount() const { return origins_.size(); }

 private:
  absl::flat_hash_map<std::string, std::string> modules_;
  absl::flat_hash_map<std::string, std::vector<std::string>> origins_;
};

// Answers of one confidence range, [lo, hi) ([lo, 1] for the top one).
struct SEMMAP_EXPORT ConfidenceBucket {
  double lo = 0;
  double hi = 0;
  std::size_t count = 0;    // nodes the truth knows answered in the range
  std::size_t correct = 0;  // of those, right
};

// A mapping scored against a ground truth (semmap-eval).
struct SEMMAP_EXPORT TruthScore {
  std::size_t nodes = 0;    // nodes of the graph
  std::size_t known = 0;    // of those, in the truth
  std::size_t correct = 0;  // of those, mapped to the truth's module
  std::size_t covered = 0;  // nodes answered with confidence > 0
  // Per Strategy (indexed by it): nodes the truth knows, and right ones.
  std::array<std::size_t, kStrategyCount> by_strategy{};
  std::array<std::size_t, kStrategyCount> by_strategy_correct{};
  // Confidence ranges [0.9, 1], [0.7, 0.9), [0.5, 0.7), [0, 0.5).
  std::vector<ConfidenceBucket> buckets;
  // The first wrong answers (up to the `max_errors` asked for), one line
  // each: node, op type, expected and given module, strategy, confidence,
  // evidence.
  std::vector<std::string> errors;
  // Fused nodes: those the truth gives origins, of them those listed with
  // the same set (SemanticMapper::originPathsOf, sorted), nodes listed at
  // all, and nodes listed that the truth does not fuse.
  std::size_t fused = 0;
  std::size_t origins_exact = 0;
  std::size_t origins_listed = 0;
  std::size_t origins_spurious = 0;

  // correct / known, and covered / nodes (0 when there are none).
  double accuracy() const { return known ? static_cast<double>(correct) / known : 0.0; }
  double coverage() const { return nodes ? static_cast<double>(covered) / nodes : 0.0; }
};

// Compares every node's mapping with `truth`. Only reads the mapper.
SEMMAP_EXPORT TruthScore ScoreAgainstTruth(const SemanticMapper& mapper, const GroundTruth& truth,
                                           std::size_t max_errors = 0);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_TRUTH_H_
