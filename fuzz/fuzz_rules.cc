// Fuzz target for Rules::Parse (JSON rule files with RE2 patterns). RE2 runs
// in linear time and each pattern's program memory is capped, so hostile
// patterns must neither hang nor exhaust memory. Properties:
//   - an error names the origin and is InvalidArgument or FailedPrecondition;
//   - parsed rules answer every query, matching their patterns against the
//     input text itself (a long, hostile subject);
//   - StripValueSuffixes() returns a prefix of its argument;
//   - the calibration reports confidences in (0, 1] never decreasing in the
//     raw one, and below kConfidentFloor for every inferred strategy.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "manifest/rule_queries.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"
#include "semmap/strategy.h"

namespace {

constexpr absl::string_view kOrigin = "fuzz_rules.json";

const semmap::Manifest& SmallManifest() {
  static const semmap::Manifest* m = new semmap::Manifest(semmap::Manifest::FromModulePaths({
      {"encoder.layer.0.attention.self.query", "torch.nn.modules.linear.Linear"},
      {"encoder.layer.1.output.LayerNorm", "torch.nn.modules.normalization.LayerNorm"},
      {"classifier", "torch.nn.modules.linear.Linear"},
      {"", "transformers.models.bert.modeling_bert.BertForSequenceClassification"},
  }));
  return *m;
}

void Exercise(const semmap::Rules& rules, absl::string_view subject) {
  (void)semmap::internal::RuleQueries(rules).IsDerivedNodeName(subject);
  const absl::string_view stripped = semmap::internal::RuleQueries(rules).StripValueSuffixes(subject);
  SEMMAP_FUZZ_CHECK(stripped.data() == subject.data() && stripped.size() <= subject.size());
  (void)semmap::internal::RuleQueries(rules).Is(semmap::internal::OpKind::kWeightPassthrough, subject);
  (void)semmap::internal::RuleQueries(rules).Is(semmap::internal::OpKind::kFollowsConsumers, subject);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<semmap::Rules> rules = semmap::Rules::Parse(text, kOrigin);
  if (!rules.ok()) {
    semmap_fuzz::CheckErrorNamesOrigin(rules.status(), kOrigin);
    const absl::StatusCode code = rules.status().code();
    SEMMAP_FUZZ_CHECK(code == absl::StatusCode::kInvalidArgument ||
                      code == absl::StatusCode::kFailedPrecondition);
    // The default rules against the hostile text as a node or value name.
    Exercise(semmap::Rules::Default(), text);
    return 0;
  }
  for (absl::string_view subject :
       {text, absl::string_view("/bert/encoder/layer.0/attention/self/query/MatMul_output_0_quantized"),
        absl::string_view("QuantizeLinear"), absl::string_view("")}) {
    Exercise(*rules, subject);
  }
  const semmap::Manifest& m = SmallManifest();
  for (semmap::ModuleId i = 0; i < static_cast<semmap::ModuleId>(m.size()); ++i) {
    (void)rules->categoryOf(m, i);
  }
  SEMMAP_FUZZ_CHECK(rules->categoryOf(m, semmap::kNoModule).empty());
  const semmap::internal::RuleQueries queries(*rules);
  for (std::size_t s = 1; s < semmap::kStrategyCount; ++s) {
    const auto strategy = static_cast<semmap::Strategy>(s);
    double last = 0.0;
    for (int step = 0; step <= 100; ++step) {
      const double reported = queries.Calibrated(strategy, step / 100.0);
      SEMMAP_FUZZ_CHECK(reported >= last && reported <= 1.0);
      SEMMAP_FUZZ_CHECK(!semmap::IsInferred(strategy) || reported < semmap::kConfidentFloor);
      last = reported;
    }
  }
  return 0;
}
