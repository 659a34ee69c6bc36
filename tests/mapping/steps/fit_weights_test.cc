// The fit check's evidence from the unnamed weights of library modules
// (mapping/steps/fit_weights.h): their sizes against their module's
// parameters'.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/steps/fit_weights.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/manifest_fit.h"
#include "test_util.h"

namespace {

using semmap::kNoModule;
using semmap::Manifest;
using semmap::ModuleId;
using semmap_test::AddInitializer;
using semmap_test::AddNode;

constexpr char kLinear[] = "torch.nn.modules.linear.Linear";

Manifest Modules() {
  auto m = Manifest::Parse(semmap_test::ManifestWithTensors({
                               {"fc", "Linear", kLinear, {"weight:4x8", "bias:4"}},
                               {"custom", "Custom", "t.Custom", {"weight:4x8"}},
                           }),
                           "weights.json");
  REQUIRE(m.ok());
  return *std::move(m);
}

// Pins which weights are judged (a library module's node's first two
// operands, float, of two or more dimensions, unnamed, also behind a
// Transpose) and the rule (some parameter of the module has as many
// elements), with the first mismatch described.
TEST_CASE("Unnamed weights of library modules are judged by their sizes") {
  const Manifest m = Modules();
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  g->add_input()->set_name("x");
  AddInitializer(g, "onnx::MatMul_1", {8, 4}, false);   // 32 elements, as fc.weight
  AddInitializer(g, "onnx::MatMul_2", {8, 6}, false);   // 48: no parameter of fc's
  AddInitializer(g, "onnx::Add_3", {4}, false);         // a vector
  AddInitializer(g, "fc.weight", {4, 8}, false);        // named: judged by its name
  AddInitializer(g, "onnx::Gemm_C", {5, 5}, false);     // a third operand
  AddInitializer(g, "onnx::MatMul_4", {7, 7}, false);   // read by a module not of the library
  AddInitializer(g, "onnx::Gather_5", {3, 3}, false)->set_data_type(onnx::TensorProto::INT64);
  AddNode(g, "/fc/MatMul", "MatMul", {"x", "onnx::MatMul_1"}, {"a"});
  AddNode(g, "Transpose_9", "Transpose", {"onnx::MatMul_2"}, {"t"});
  AddNode(g, "/fc/MatMul_1", "MatMul", {"a", "t"}, {"b"});
  AddNode(g, "/fc/Add", "Add", {"b", "onnx::Add_3"}, {"c"});
  AddNode(g, "/fc/Gemm", "Gemm", {"c", "fc.weight", "onnx::Gemm_C"}, {"d"});
  AddNode(g, "/fc/Gather", "Gather", {"onnx::Gather_5", "d"}, {"e"});
  AddNode(g, "/custom/MatMul", "MatMul", {"e", "onnx::MatMul_4"}, {"f"});
  const semmap::Graph graph = semmap_test::ParseGraph(model);
  const ModuleId fc = m.find("fc");
  std::vector<ModuleId> node_modules = {fc, kNoModule, fc, fc, fc, fc, m.find("custom")};
  REQUIRE(node_modules.size() == graph.size());

  semmap_test::ContextParts parts(graph, m);
  semmap::ManifestFit fit;
  std::string first;
  semmap::internal::CheckLibraryTensors(graph, node_modules, m, parts.rules, parts.ops,
                                        parts.tensors, &fit, &first);
  CHECK(fit.unnamed_weights == 2);  // onnx::MatMul_1, and onnx::MatMul_2 behind the Transpose
  CHECK(fit.weight_size_mismatches == 1);
  CHECK(first == "\"onnx::MatMul_2\" read by \"/fc/MatMul_1\" has 48 elements, no parameter "
                 "of \"fc\" has as many");

  // Nodes without a module judge nothing.
  semmap::ManifestFit none;
  std::string unused;
  semmap::internal::CheckLibraryTensors(graph, std::vector<ModuleId>(graph.size(), kNoModule), m,
                                        parts.rules, parts.ops, parts.tensors, &none, &unused);
  CHECK(none.unnamed_weights == 0);
  CHECK(unused.empty());
}

// Pins the check on a real export whose convolutions read weights named
// by the exporter, not after their parameters (its BatchNorms folded in):
// its own manifest has a parameter of each size, the manifest of the same
// architecture built wider has not.
TEST_CASE("A CNN's folded weights fit its own manifest, not a wider one's", "[fixture]") {
  const std::string dir = "torch-2.15/resnet-imgcls.torchscript";
  const semmap::Graph graph = semmap_test::LoadGraph(dir);
  const std::string wider = "torch-2.15/negative/resnet-imgcls.width";
  for (const std::string& manifest_dir : {dir, wider}) {
    CAPTURE(manifest_dir);
    const Manifest m = semmap_test::LoadManifest(manifest_dir);
    const auto steps = semmap_test::RunNameSteps(graph, m);
    semmap_test::ContextParts parts(graph, m, {}, semmap::Rules::Default(), steps->binding);
    semmap::ManifestFit fit;
    std::string first;
    semmap::internal::CheckLibraryTensors(graph, steps->scope_modules, m, parts.rules, parts.ops,
                                          parts.tensors, &fit, &first);
    CHECK(fit.unnamed_weights > 0);
    if (manifest_dir == dir) {
      CHECK(fit.weight_size_mismatches == 0);
      CHECK(first.empty());
    } else {
      CHECK(fit.weight_size_mismatches > 0);
      CHECK_THAT(first, Catch::Contains("no parameter of"));
    }
  }
}

}  // namespace
