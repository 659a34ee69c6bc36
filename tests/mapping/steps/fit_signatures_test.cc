// The fit check's evidence from forward signatures
// (mapping/steps/fit_signatures.h), on the EfficientNet twins of the
// torch 2.15 slice: the same module paths and classes, one with
// BatchNorms, the other with GroupNorms.
#include <fstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/core/op_traits.h"
#include "mapping/steps/fit_signatures.h"
#include "nlohmann/json.hpp"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::Manifest;
using semmap::Rules;

constexpr char kBn[] = "torch-2.15/timm-efficientnet";
constexpr char kGn[] = "torch-2.15/timm-efficientnet-gn";

std::string Dir(const char* model, const char* exporter) {
  return std::string(model) + "." + exporter;
}

semmap::internal::OpConflicts SignatureOps(const Graph& g, const Manifest& m) {
  const auto steps = semmap_test::RunNameSteps(g, m);
  return semmap::internal::CheckSignatureOps(g, steps->scope_modules, m, Rules::Default());
}

semmap::internal::FoldConflicts Folds(const Graph& g, const Manifest& m,
                                      const Rules& rules = Rules::Default()) {
  const auto steps = semmap_test::RunNameSteps(g, m, rules);
  return semmap::internal::CheckFolds(g, steps->scope_modules, m, rules,
                                      semmap::internal::OpTraits(g, rules));
}

// Pins CheckSignatureOps: norm nodes (rules "signature_checked_ops") are
// checked in modules whose forward is recorded, and explained when that
// forward runs an operation exported as their op; the twin's group
// normalisations are not explained by BatchNorm forwards.
TEST_CASE("Norm nodes are checked against their module's forward", "[fixture]") {
  const Graph gn = semmap_test::LoadGraph(Dir(kGn, "torchscript"));
  const semmap::internal::OpConflicts own =
      SignatureOps(gn, semmap_test::LoadManifest(Dir(kGn, "torchscript")));
  CHECK(own.checked > 0);
  CHECK(own.unexplained == 0);
  CHECK(own.first.empty());

  const semmap::internal::OpConflicts twin =
      SignatureOps(gn, semmap_test::LoadManifest(Dir(kBn, "dynamo")));
  CHECK(twin.checked == own.checked);
  CHECK(twin.unexplained == twin.checked);
  CHECK(twin.modules > 0);
  CHECK(twin.modules <= twin.unexplained);
  // TorchScript exports group_norm as an InstanceNormalization between
  // two Reshapes; a BatchNorm forward is exported as no such node.
  CHECK_THAT(twin.first, Catch::Contains("\" runs InstanceNormalization in the graph; no "
                                         "operation of its forward in the manifest is "
                                         "exported as one"));
}

// Pins CheckFolds: convolutions that read a bias their module has not are
// folds; a fold of a module that normalises with a kind no exporter folds
// (group_norm) is a conflict; the rules' "folded_ops" decide the kinds; a
// graph with a quantizer's nodes is not judged.
TEST_CASE("Folds are judged by the module folded and the rules' folded ops", "[fixture]") {
  const Graph bn = semmap_test::LoadGraph(Dir(kBn, "torchscript"));
  const semmap::internal::FoldConflicts own =
      Folds(bn, semmap_test::LoadManifest(Dir(kBn, "torchscript")));
  CHECK(own.folds > 0);
  CHECK(own.conflicts == 0);
  CHECK(own.first.empty());

  const Manifest gn_manifest = semmap_test::LoadManifest(Dir(kGn, "dynamo"));
  const semmap::internal::FoldConflicts twin = Folds(bn, gn_manifest);
  CHECK(twin.folds == own.folds);
  CHECK(twin.conflicts == twin.folds);
  CHECK_THAT(twin.first, Catch::Contains("has no node, and the weights of the module before it "
                                         "gained its bias"));

  std::ifstream in(std::string(SEMMAP_SOURCE_DIR) + "/rules/default.json");
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["folded_ops"]["torch"] = "^(batch_norm|group_norm)$";
  auto rules = Rules::Parse(doc.dump(), "folds.json");
  REQUIRE(rules.ok());
  const semmap::internal::FoldConflicts allowed = Folds(bn, gn_manifest, *rules);
  CHECK(allowed.folds == own.folds);
  CHECK(allowed.conflicts == 0);

  // The same graph with one node a tool added (a quantizer's, or a fusion
  // of another domain than ONNX's): not judged.
  for (const bool quantizer : {true, false}) {
    CAPTURE(quantizer);
    onnx::ModelProto model;
    {
      std::ifstream file(semmap_test::Fixture(Dir(kBn, "torchscript"), "model.onnx"),
                         std::ios::binary);
      REQUIRE(model.ParseFromIstream(&file));
    }
    onnx::NodeProto* added = semmap_test::AddNode(model.mutable_graph(), "added",
                                                  quantizer ? "QuantizeLinear" : "FusedConv",
                                                  {model.graph().input(0).name()}, {"added_out"});
    if (!quantizer) added->set_domain("com.microsoft");
    const Graph tool = semmap_test::ParseGraph(model);
    const semmap::internal::FoldConflicts not_judged = Folds(tool, gn_manifest);
    CHECK(not_judged.folds == 0);
    CHECK(not_judged.conflicts == 0);
    CHECK(not_judged.first.empty());
    // A tool's node is looked for only where there is a conflict.
    CHECK(Folds(tool, semmap_test::LoadManifest(Dir(kBn, "torchscript"))).folds == own.folds);
  }
}

}  // namespace
