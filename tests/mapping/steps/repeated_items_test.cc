// Whether a manifest is of a deeper model than the graph
// (mapping/steps/repeated_items.h): the trailing items of a repeated
// container nothing reaches, and the modules owning the graph's weights.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/steps/fit_notes.h"
#include "mapping/steps/repeated_items.h"
#include "semmap/manifest.h"
#include "test_util.h"

namespace {

using semmap::kNoModule;
using semmap::Manifest;
using semmap::ModuleId;
using semmap_test::ManifestModule;

Manifest Parse(const std::vector<ManifestModule>& modules) {
  auto m = Manifest::Parse(semmap_test::ManifestWithTensors(modules), "items.json");
  REQUIRE(m.ok());
  return *std::move(m);
}

// `n` numbered layers of one class under "layers".
Manifest Layers(int n) {
  std::vector<ManifestModule> modules = {{"layers", "ModuleList", "t.List", {}}};
  for (int i = 0; i < n; ++i) {
    modules.push_back({"layers." + std::to_string(i), "Layer", "t.Layer", {}});
    modules.push_back({"layers." + std::to_string(i) + ".fc", "Linear",
                       "torch.nn.modules.linear.Linear", {"weight:4x4"}});
  }
  return Parse(modules);
}

std::vector<ModuleId> Modules(const Manifest& m, const std::vector<std::string>& paths) {
  std::vector<ModuleId> out;
  for (const std::string& p : paths) {
    out.push_back(m.find(p));
    REQUIRE(out.back() != kNoModule);
  }
  return out;
}

// Pins the threshold: unused trailing items are a misfit from a quarter of
// the container on (one of four), not below (one of five: a dead last
// layer); the container and its item count are named; a graph reaching
// nothing says nothing.
TEST_CASE("Trailing items nothing reaches are a misfit from a quarter of the container") {
  ModuleId container = kNoModule;
  std::size_t items = 0;
  const Manifest four = Layers(4);
  CHECK(semmap::internal::UnusedRepeatedItems(
            four, Modules(four, {"layers.0.fc", "layers.1.fc"}), &container, &items) == 2);
  CHECK(four.path(container) == "layers");
  CHECK(items == 4);
  CHECK(semmap::internal::UnusedRepeatedItems(
            four, Modules(four, {"layers.0.fc", "layers.1", "layers.2.fc"}), &container,
            &items) == 1);
  const Manifest five = Layers(5);
  CHECK(semmap::internal::UnusedRepeatedItems(
            five, Modules(five, {"layers.0.fc", "layers.1", "layers.2.fc", "layers.3"}),
            &container, &items) == 0);
  // Unknown modules touch nothing.
  CHECK(semmap::internal::UnusedRepeatedItems(four, {kNoModule, kNoModule}, &container,
                                              &items) == 0);
}

// Pins what repeats: items of one class in a numbered container, and named
// blocks that only hold modules ("denselayer1"...); a pipeline of several
// classes and named modules with tensors of their own ("bn1", "bn2") do
// not, and those after the last one used with tensors are noted as folded.
TEST_CASE("Only items that repeat count; folded neighbours are noted") {
  const Manifest m = Parse({
      {"mlp", "Sequential", "torch.nn.modules.container.Sequential", {}},
      {"mlp.0", "Linear", "torch.nn.modules.linear.Linear", {"weight:4x4"}},
      {"mlp.1", "ReLU", "torch.nn.modules.activation.ReLU", {}},
      {"mlp.2", "Linear", "torch.nn.modules.linear.Linear", {"weight:4x4"}},
      {"dense", "Block", "t.Block", {}},
      {"dense.denselayer1", "DenseLayer", "t.DenseLayer", {}},
      {"dense.denselayer1.conv", "Conv2d", "t.Conv", {"weight:4x4"}},
      {"dense.denselayer2", "DenseLayer", "t.DenseLayer", {}},
      {"dense.denselayer2.conv", "Conv2d", "t.Conv", {"weight:4x4"}},
      {"dense.denselayer3", "DenseLayer", "t.DenseLayer", {}},
      {"dense.denselayer3.conv", "Conv2d", "t.Conv", {"weight:4x4"}},
      {"stem", "Stem", "t.Stem", {}},
      {"stem.bn1", "BatchNorm2d", "t.Norm", {"weight:4"}},
      {"stem.bn2", "BatchNorm2d", "t.Norm", {"weight:4"}},
      {"stem.bn3", "BatchNorm2d", "t.Norm", {"weight:4"}},
  });
  std::vector<bool> touched(m.size(), false);
  for (const char* p : {"mlp.0", "stem.bn1"}) semmap::internal::Touch(m, m.find(p), &touched);
  CHECK(touched[m.find("mlp")]);
  CHECK(touched[m.root()]);
  CHECK_FALSE(touched[m.find("dense")]);
  ModuleId container = kNoModule;
  std::size_t items = 0;
  semmap::internal::NoteTally notes;
  CHECK(semmap::internal::UnusedTrailingItems(m, touched, &container, &items, &notes) == 0);
  CHECK(container == kNoModule);
  const std::vector<semmap::FitNote> folded = notes.Notes();
  REQUIRE(folded.size() == 1);
  CHECK(folded[0].kind == semmap::FitNoteKind::kFoldedByExporter);
  CHECK(folded[0].count == 3);  // mlp.2, stem.bn2, stem.bn3; not the ReLU
  CHECK(folded[0].example == "mlp.2");

  semmap::internal::Touch(m, m.find("dense.denselayer1.conv"), &touched);
  CHECK(semmap::internal::UnusedTrailingItems(m, touched, &container, &items, &notes) == 2);
  CHECK(m.path(container) == "dense");
  CHECK(items == 3);
}

// Pins WeightOwners: an initializer named like a parameter as written,
// with a quantizer's suffix, or inside a tool's name; none for an
// exporter's own name.
TEST_CASE("The owners of the graph's parameter-named initializers") {
  const Manifest m = Layers(2);
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  for (const char* name : {"layers.1.fc.weight", "onnx::MatMul_7", "layers.0.fc.weight_quantized",
                           "q_output_layers.1.fc.weight_1", "layers.9.fc.weight"}) {
    semmap_test::AddInitializer(g, name, {4, 4}, /*with_data=*/false);
  }
  semmap_test::AddNode(g, "/layers.0/fc/MatMul", "MatMul", {"x", "layers.1.fc.weight"}, {"y"});
  const semmap::Graph graph = semmap_test::ParseGraph(model);
  CHECK(semmap::internal::WeightOwners(graph, m, semmap::Rules::Default()) ==
        Modules(m, {"layers.1.fc", "layers.0.fc", "layers.1.fc"}));
}

}  // namespace
