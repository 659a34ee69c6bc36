#include "semmap/truth.h"

#include <algorithm>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "io/file_io.h"
#include "io/json_nesting.h"
#include "nlohmann/json.hpp"

namespace semmap {
namespace {

using nlohmann::json;

absl::Status Error(absl::string_view origin, absl::string_view pointer, absl::string_view cause) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": ", pointer, ": ", cause));
}

}  // namespace

absl::StatusOr<GroundTruth> GroundTruth::Load(const std::string& path,
                                              const TruthOptions& options) {
  SEMMAP_ASSIGN_OR_RETURN(std::string text, internal::ReadFile(path, options.max_file_bytes));
  return Parse(text, path, options);
}

absl::StatusOr<GroundTruth> GroundTruth::Parse(absl::string_view text, absl::string_view origin,
                                               const TruthOptions& options) {
  if (text.size() > options.max_file_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", text.size(),
                                                   " bytes, above the limit of ",
                                                   options.max_file_bytes, " bytes"));
  }
  SEMMAP_RETURN_IF_ERROR(internal::CheckJsonNesting(text, options.max_nesting, origin));
  try {
    const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ": not a JSON object"));
    }
    auto nodes = doc.find("nodes");
    if (nodes == doc.end() || !nodes->is_object()) {
      return Error(origin, "/nodes", "missing or not an object");
    }
    GroundTruth truth;
    truth.modules_.reserve(nodes->size());
    for (auto it = nodes->begin(); it != nodes->end(); ++it) {
      if (!it.value().is_string()) {
        return Error(origin, absl::StrCat("/nodes/", internal::Abbreviate(it.key())),
                     "expected a module path string");
      }
      truth.modules_.emplace(it.key(), it.value().get<std::string>());
    }
    auto origins = doc.find("origins");
    if (origins == doc.end()) return truth;
    if (!origins->is_object()) return Error(origin, "/origins", "not an object");
    for (auto it = origins->begin(); it != origins->end(); ++it) {
      const std::string pointer = absl::StrCat("/origins/", internal::Abbreviate(it.key()));
      if (!it.value().is_array()) return Error(origin, pointer, "expected a list of module paths");
      std::vector<std::string>& parts = truth.origins_[it.key()];
      for (const json& part : it.value()) {
        if (!part.is_string()) return Error(origin, pointer, "expected a list of module paths");
        parts.push_back(part.get<std::string>());
      }
      std::sort(parts.begin(), parts.end());
    }
    return truth;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(origin, ": out of memory reading ", text.size(), " bytes of JSON"));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", e.what()));
  }
}

TruthScore ScoreAgainstTruth(const SemanticMapper& mapper, const GroundTruth& truth,
                             std::size_t max_errors) {
  const Graph& graph = mapper.graph();
  TruthScore t;
  t.buckets = {{0.9, 1.0}, {0.7, 0.9}, {0.5, 0.7}, {0.0, 0.5}};
  t.nodes = graph.size();
  for (NodeId i = 0; i < static_cast<NodeId>(graph.size()); ++i) {
    const Mapping m = mapper.moduleFor(i);
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
    for (ConfidenceBucket& b : t.buckets) {
      if (m.confidence >= b.lo && (m.confidence < b.hi || (b.hi == 1.0 && m.confidence <= 1.0))) {
        ++b.count;
        b.correct += ok;
        break;
      }
    }
    if (!ok && t.errors.size() < max_errors) {
      t.errors.push_back(absl::StrCat(graph.node(i).id, " [", graph.node(i).op_type,
                                      "]: expected \"", *expected, "\", got \"",
                                      m.mapped() ? std::string(m.module_path) : "(unmapped)",
                                      "\" (", StrategyName(m.strategy), " ", m.confidence, ": ",
                                      m.evidence, ")"));
    }
  }
  return t;
}

}  // namespace semmap
