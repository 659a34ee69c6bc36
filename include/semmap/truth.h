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

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"

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

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_TRUTH_H_
