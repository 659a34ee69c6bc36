#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "manifest/op_kinds.h"
#include "manifest/rule_queries.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"
#include "semmap/rules.h"
#include "test_util.h"

using semmap::Rules;

namespace {

std::string RulesWith(const std::string& body) {
  return R"({"format":"semmap.rules","version":1,)" + body + "}";
}

}  // namespace

TEST_CASE("The default rules classify real modules", "[rules][fixture]") {
  auto m = semmap::Manifest::Load(semmap_test::Fixture("bert-seqcls.torchscript", "manifest.json"));
  REQUIRE(m.ok());
  const Rules& rules = Rules::Default();
  auto category = [&](const std::string& path) {
    const semmap::ModuleId id = m->find(path);
    REQUIRE(id != semmap::kNoModule);
    return rules.categoryOf(*m, id);
  };
  CHECK(category("bert.encoder.layer.0.attention.self.query") == "projection");
  CHECK(category("bert.encoder.layer.0.attention.self") == "attention");
  CHECK(category("bert.encoder.layer.0.attention.output.LayerNorm") == "normalization");
  CHECK(category("bert.embeddings.word_embeddings") == "embedding");
  CHECK(category("bert.encoder.layer.0") == "block");
  CHECK(category("bert.encoder.layer.0.intermediate") == "mlp");
  CHECK(category("classifier") == "head");
  CHECK(category("bert.pooler") == "head");
  CHECK(rules.categoryOf(*m, semmap::kNoModule).empty());
}

TEST_CASE("All categories at once are each module's category", "[rules][fixture]") {
  // The default rules on real manifests, and rules mixing class, path and
  // repeated-child conditions, where modules of one class differ by path.
  auto custom = Rules::Parse(
      RulesWith(R"("categories":[{"category":"first-layer","class":"Layer$","path":"[.]0$"},)"
                R"({"category":"item","repeated_child":true,"qualified_class":"modeling_"},)"
                R"({"category":"linear","class":"^Linear$"},)"
                R"({"category":"named","path":"query|key|value"}])"),
      "user.json");
  INFO(custom.status());
  REQUIRE(custom.ok());
  for (const char* dir : {"bert-seqcls.torchscript", "t5-seq2seq-lm.torchscript",
                          "whisper-speech-seq2seq.dynamo", "resnet-imgcls.torchscript"}) {
    auto m = semmap::Manifest::Load(semmap_test::Fixture(dir, "manifest.json"));
    REQUIRE(m.ok());
    for (const Rules* rules : {&Rules::Default(), static_cast<const Rules*>(&*custom)}) {
      const std::vector<std::string> all = rules->categoriesOf(*m);
      REQUIRE(all.size() == m->size());
      std::size_t named = 0;
      for (std::size_t i = 0; i < m->size(); ++i) {
        INFO(dir << " " << m->module(static_cast<semmap::ModuleId>(i)).path);
        CHECK(all[i] == rules->categoryOf(*m, static_cast<semmap::ModuleId>(i)));
        named += !all[i].empty();
      }
      CHECK(named > 0);
    }
  }
}

TEST_CASE("Default value-name and op rules", "[rules]") {
  const Rules& rules = Rules::Default();
  CHECK(semmap::internal::RuleQueries(rules).IsDerivedNodeName("/a/b/LayerNormalization_output_0_QuantizeLinear"));
  CHECK_FALSE(semmap::internal::RuleQueries(rules).IsDerivedNodeName("/a/b/MatMul_quant"));
  CHECK_FALSE(semmap::internal::RuleQueries(rules).IsDerivedNodeName("/a/b/MatMul_1"));
  CHECK(semmap::internal::RuleQueries(rules).StripValueSuffixes("/a/MatMul_output_0") == "/a/MatMul");
  CHECK(semmap::internal::RuleQueries(rules).StripValueSuffixes("/a/MatMul_output_0_quantized") == "/a/MatMul");
  CHECK(semmap::internal::RuleQueries(rules).StripValueSuffixes("enc.fc.weight_scale") == "enc.fc.weight");
  CHECK(semmap::internal::RuleQueries(rules).StripValueSuffixes("enc.fc.weight") == "enc.fc.weight");
  CHECK(semmap::internal::RuleQueries(rules).Is(semmap::internal::OpKind::kWeightPassthrough, "Transpose"));
  CHECK(semmap::internal::RuleQueries(rules).Is(semmap::internal::OpKind::kWeightPassthrough, "DequantizeLinear"));
  CHECK_FALSE(semmap::internal::RuleQueries(rules).Is(semmap::internal::OpKind::kWeightPassthrough, "MatMul"));
  CHECK(semmap::internal::RuleQueries(rules).Is(semmap::internal::OpKind::kFollowsConsumers, "DynamicQuantizeLinear"));
  CHECK(semmap::internal::RuleQueries(rules).Is(semmap::internal::OpKind::kFollowsConsumers, "Constant"));
  CHECK_FALSE(semmap::internal::RuleQueries(rules).Is(semmap::internal::OpKind::kFollowsConsumers, "Add"));
  // A tensor derived from a parameter, named after it; a value suffix is
  // not a derivation.
  const semmap::internal::RuleQueries q(rules);
  CHECK(q.DerivedFrom("layer1.0.conv1.weight_bias") == "layer1.0.conv1.weight");
  CHECK(q.DerivedFrom("layer1.0.conv1.weight") == "layer1.0.conv1.weight");
  CHECK(q.DerivedFrom("enc.fc.weight_scale") == "enc.fc.weight_scale");
  // What a torch operation of a forward signature may be exported as.
  CHECK(q.MayExportAs("add", "Add"));
  CHECK(q.MayExportAs("add", "SkipLayerNormalization"));
  CHECK(q.MayExportAs("layer_norm", "ReduceMean"));
  CHECK(q.MayExportAs("scaled_dot_product_attention", "Softmax"));
  CHECK_FALSE(q.MayExportAs("add", "Mul"));
  CHECK_FALSE(q.MayExportAs("linear", "Transpose"));  // folded into the weight
  CHECK_FALSE(q.MayExportAs("dropout", "Add"));
  CHECK_FALSE(q.MayExportAs("no_such_op", "Add"));
}

TEST_CASE("Each op kind is read from its own key", "[rules]") {
  using semmap::internal::kOpKindCount;
  using semmap::internal::kOpKindKeys;
  using semmap::internal::OpKind;
  const std::size_t kind = GENERATE(range(std::size_t{0}, kOpKindCount));
  const std::string key(kOpKindKeys[kind]);
  CAPTURE(key);
  auto rules = Rules::Parse(RulesWith("\"" + key + "\":{\"pattern\":\"^Zz$\"}"), "kinds.json");
  REQUIRE(rules.ok());
  const semmap::internal::RuleQueries q(*rules);
  for (std::size_t k = 0; k < kOpKindCount; ++k) {
    const std::string other(kOpKindKeys[k]);
    CAPTURE(other);
    CHECK(q.Is(static_cast<OpKind>(k), "Zz") == (k == kind));
    CHECK_FALSE(q.Is(static_cast<OpKind>(k), "Zzz"));
  }
}

TEST_CASE("The default rules' commutative ops", "[rules]") {
  using semmap::internal::OpKind;
  const semmap::internal::RuleQueries q(Rules::Default());
  for (const char* op : {"Add", "Mul", "Sum", "Max", "Min", "Mean", "And", "Or", "Xor", "Equal",
                         "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    CAPTURE(op);
    CHECK(q.Is(OpKind::kCommutative, op));
  }
  for (const char* op : {"Sub", "Div", "MatMul", "Concat", "AddX", "Greater"}) {
    CAPTURE(op);
    CHECK_FALSE(q.Is(OpKind::kCommutative, op));
  }
}

TEST_CASE("A rule file without commutative_ops keeps the built-in set", "[rules]") {
  // The commutative ops were fixed in code before 2.1 made them a key: a file
  // written then, which lacks it, means what it meant; one that states the
  // key means what it states.
  using semmap::internal::OpKind;
  auto older = Rules::Parse(RulesWith(R"("quantized_ops":{"pattern":"^Q$"})"), "older.json");
  REQUIRE(older.ok());
  const semmap::internal::RuleQueries q(*older);
  CHECK(q.Is(OpKind::kCommutative, "Add"));
  CHECK(q.Is(OpKind::kCommutative, "BitwiseXor"));
  CHECK_FALSE(q.Is(OpKind::kCommutative, "Sub"));
  CHECK_FALSE(q.Is(OpKind::kDequantize, "DequantizeLinear"));  // other kinds: absent is none
  auto stated = Rules::Parse(RulesWith(R"("commutative_ops":{"pattern":"^Mul$"})"), "stated.json");
  REQUIRE(stated.ok());
  const semmap::internal::RuleQueries r(*stated);
  CHECK(r.Is(OpKind::kCommutative, "Mul"));
  CHECK_FALSE(r.Is(OpKind::kCommutative, "Add"));
}

TEST_CASE("User rules extend the behaviour without code", "[rules]") {
  auto rules = Rules::Parse(RulesWith(R"("follow_consumers_ops":{"pattern":"^MyPack$"},)"
                                      R"("categories":[{"category":"gizmo","class":"^M$"}])"),
                            "user.json");
  REQUIRE(rules.ok());
  CHECK(semmap::internal::RuleQueries(*rules).Is(semmap::internal::OpKind::kFollowsConsumers, "MyPack"));
  CHECK_FALSE(semmap::internal::RuleQueries(*rules).Is(semmap::internal::OpKind::kFollowsConsumers, "Constant"));
  auto m = semmap::Manifest::Parse(semmap_test::ManifestJson({"a"}), "m.json");
  REQUIRE(m.ok());
  CHECK(rules->categoryOf(*m, m->find("a")) == "gizmo");
}

TEST_CASE("A rule file's calibration maps raw confidences per strategy", "[rules]") {
  auto rules = Rules::Parse(
      RulesWith(R"("calibration":{"description":"x","structure":[[0.4,0.5],[0.8,0.7]],)"
                R"("exact_scope":[[0.5,1.0]]})"),
      "calibrated.json");
  REQUIRE(rules.ok());
  const semmap::internal::RuleQueries q(*rules);
  using semmap::Strategy;
  CHECK(q.Calibrated(Strategy::kStructure, 0.6) == Approx(0.6));  // interpolated
  CHECK(q.Calibrated(Strategy::kStructure, 0.1) == Approx(0.5));  // clamped below
  CHECK(q.Calibrated(Strategy::kStructure, 0.9) == Approx(0.7));  // and above
  CHECK(q.Calibrated(Strategy::kTensorNames, 0.33) == Approx(0.33));  // not calibrated
  // Evidence may be reported certain; inference stays below the floor even
  // where no table speaks for it (a produced parameter's raw 0.9).
  CHECK(q.Calibrated(Strategy::kExactScope, 0.6) == 1.0);
  CHECK(q.Calibrated(Strategy::kExporterMetadata, 1.0) == 1.0);
  CHECK(q.Calibrated(Strategy::kTensorNames, 0.9) < semmap::kConfidentFloor);
  CHECK(q.Calibrated(Strategy::kNeighbourhood, 1.0) < semmap::kConfidentFloor);
  // The shipped rules calibrate inference only, and keep it below the floor.
  const semmap::internal::RuleQueries d(Rules::Default());
  CHECK(d.Calibrated(Strategy::kExactScope, 1.0) == 1.0);
  CHECK(d.Calibrated(Strategy::kExporterMetadata, 0.85) == 0.85);
  for (Strategy s : {Strategy::kTensorNames, Strategy::kOpRule, Strategy::kNeighbourhood,
                     Strategy::kStructure}) {
    for (double raw = 0.0; raw <= 1.0; raw += 0.05) {
      CAPTURE(semmap::StrategyName(s), raw);
      CHECK(d.Calibrated(s, raw) < semmap::kConfidentFloor);
      CHECK(d.Calibrated(s, raw) > 0.0);
    }
  }
}

TEST_CASE("A rule file's calibration may differ per kind of graph", "[rules]") {
  auto rules = Rules::Parse(
      RulesWith(R"("calibration":{"structure":[[0.4,0.5],[0.8,0.7]],"op_rule":[[0.5,0.6]]},)"
                R"("calibration_by_kind":{"description":"x","unnamed":{"structure":[[0.4,0.3],[0.8,0.4]]}})"),
      "by-kind.json");
  REQUIRE(rules.ok());
  const semmap::internal::RuleQueries q(*rules);
  using semmap::GraphKind;
  using semmap::Strategy;
  CHECK(q.Calibrated(Strategy::kStructure, 0.6, GraphKind::kUnnamed) == Approx(0.35));
  CHECK(q.Calibrated(Strategy::kStructure, 0.6, GraphKind::kNamed) == Approx(0.6));
  CHECK(q.Calibrated(Strategy::kStructure, 0.6, GraphKind::kQuantized) == Approx(0.6));
  // A strategy the kind's table leaves out takes the general table, and so
  // does a raw value below the kind's first point (never seen in that kind).
  CHECK(q.Calibrated(Strategy::kOpRule, 0.5, GraphKind::kUnnamed) == Approx(0.6));
  CHECK(q.Calibrated(Strategy::kStructure, 0.2, GraphKind::kUnnamed) == Approx(0.5));
  for (GraphKind k : {GraphKind::kNamed, GraphKind::kUnnamed, GraphKind::kQuantized}) {
    GraphKind parsed;
    REQUIRE(semmap::ParseGraphKind(semmap::GraphKindName(k), &parsed));
    CHECK(parsed == k);
  }
  CHECK(semmap::GraphKindName(static_cast<GraphKind>(7)) == "invalid");
  // The shipped kinds' tables keep inference below the floor too.
  const semmap::internal::RuleQueries d(Rules::Default());
  for (GraphKind k : {GraphKind::kNamed, GraphKind::kUnnamed, GraphKind::kQuantized}) {
    for (double raw = 0.0; raw <= 1.0; raw += 0.05) {
      CHECK(d.Calibrated(Strategy::kStructure, raw, k) < semmap::kConfidentFloor);
      CHECK(d.Calibrated(Strategy::kOpRule, raw, k) < semmap::kConfidentFloor);
    }
  }
}

TEST_CASE("Bad rule files name the file, the place and the cause", "[rules]") {
  auto row = GENERATE(table<std::string, absl::StatusCode, std::string>({
      {"not json", absl::StatusCode::kInvalidArgument, "not valid JSON"},
      {R"({"format":"other"})", absl::StatusCode::kInvalidArgument, "not a semmap rule file"},
      {R"({"format":"semmap.rules","version":9})", absl::StatusCode::kFailedPrecondition, "version 1"},
      {RulesWith(R"("derived_node_names":[{"pattern":"(unclosed"}])"),
       absl::StatusCode::kInvalidArgument, "/derived_node_names/0/pattern: invalid pattern"},
      {RulesWith(R"("derived_node_names":[{"pattern":""}])"),
       absl::StatusCode::kInvalidArgument, "pattern must be 1 to"},
      {RulesWith(R"("derived_node_names":{"pattern":"x"})"),
       absl::StatusCode::kInvalidArgument, "/derived_node_names: expected an array"},
      {RulesWith(R"("categories":[{"category":"x"}])"),
       absl::StatusCode::kInvalidArgument, "needs class, qualified_class, path or repeated_child"},
      {RulesWith(R"("calibration":{"guessing":[[0.1,0.2]]})"),
       absl::StatusCode::kInvalidArgument, "/calibration/guessing: not a strategy name"},
      {RulesWith(R"("calibration_by_kind":{"blurry":{"structure":[[0.1,0.2]]}})"),
       absl::StatusCode::kInvalidArgument, "/calibration_by_kind/blurry: not a graph kind"},
      {RulesWith(R"("calibration_by_kind":{"unnamed":{"structure":[[0.4,0.95]]}})"),
       absl::StatusCode::kInvalidArgument,
       "/calibration_by_kind/unnamed/structure/0: structure infers its answers"},
      {RulesWith(R"("calibration":{"structure":[[0.5,0.6],[0.4,0.7]]})"),
       absl::StatusCode::kInvalidArgument, "/calibration/structure/1: raw confidences must increase"},
      // Inference never reaches the confident floor, whatever the table says,
      // and a more confident raw answer is never reported as less so.
      {RulesWith(R"("calibration":{"structure":[[0.4,1.0]]})"), absl::StatusCode::kInvalidArgument,
       "/calibration/structure/0: structure infers its answers: reported confidences must stay "
       "below the confident floor 0.9, got 1"},
      {RulesWith(R"("calibration":{"tensor_names":[[0.2,0.5],[0.8,0.9]]})"),
       absl::StatusCode::kInvalidArgument, "/calibration/tensor_names/1: tensor_names infers"},
      {RulesWith(R"("calibration":{"op_rule":[[0.0,0.8],[1.0,0.01]]})"),
       absl::StatusCode::kInvalidArgument,
       "/calibration/op_rule/1: calibrated confidences must not decrease as raw ones increase "
       "(0.01 after 0.8)"},
      {RulesWith(R"("calibration":{"exact_scope":[[0.0,1.0],[1.0,0.01]]})"),
       absl::StatusCode::kInvalidArgument, "/calibration/exact_scope/1: calibrated confidences must not decrease"},
      {RulesWith(R"("calibration":{"unmapped":[[0.5,0.5]]})"), absl::StatusCode::kInvalidArgument,
       "/calibration/unmapped: an unmapped node's confidence is always 0"},
      {RulesWith(R"("calibration":{"structure":[[0.5,0]]})"),
       absl::StatusCode::kInvalidArgument, "calibrated in (0, 1]"},
      {RulesWith(R"("calibration":{"structure":[[0.5]]})"),
       absl::StatusCode::kInvalidArgument, "expected [raw, calibrated]"},
      {RulesWith(R"("calibration":{"structure":[]})"),
       absl::StatusCode::kInvalidArgument, "expected a non-empty array"},
      {RulesWith(R"("forward_ops":[{"torch":"^add$"}])"),
       absl::StatusCode::kInvalidArgument, "/forward_ops/0: expected {\"torch\": ..., \"onnx\": ...}"},
      {RulesWith(R"("forward_ops":{"torch":"^add$","onnx":"^Add$"})"),
       absl::StatusCode::kInvalidArgument, "/forward_ops: expected an array"},
      {RulesWith(R"("forward_ops":[{"torch":"^add$","onnx":"(Add"}])"),
       absl::StatusCode::kInvalidArgument, "/forward_ops/0/onnx: invalid pattern"},
      {RulesWith(R"("derived_tensor_suffixes":[{"pattern":""}])"),
       absl::StatusCode::kInvalidArgument, "/derived_tensor_suffixes/0/pattern: pattern must be 1 to"},
      // Pathological: a program far beyond the memory budget.
      {RulesWith(R"x("weight_passthrough_ops":{"pattern":"((((((((((a{1,100}){1,100}){1,100}){1,100}){1,100}){1,100}){1,100}){1,100}){1,100}){1,100})"})x"),
       absl::StatusCode::kInvalidArgument, "invalid pattern"},
  }));
  CAPTURE(std::get<0>(row));
  auto rules = Rules::Parse(std::get<0>(row), "bad-rules.json");
  REQUIRE_FALSE(rules.ok());
  CHECK(rules.status().code() == std::get<1>(row));
  const std::string message(rules.status().message());
  CAPTURE(message);
  CHECK(message.rfind("bad-rules.json: ", 0) == 0);
  CHECK(message.find(std::get<2>(row)) != std::string::npos);
}

TEST_CASE("The rule file shipped in rules/ is the compiled-in one", "[rules]") {
  auto loaded = Rules::Load(std::string(SEMMAP_SOURCE_DIR) + "/rules/default.json");
  REQUIRE(loaded.ok());
  CHECK(semmap::internal::RuleQueries(*loaded).IsDerivedNodeName("/x/Add_output_0_QuantizeLinear"));
  auto missing = Rules::Load("/nonexistent/rules.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
}
