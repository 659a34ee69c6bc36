// Nodes that do several modules' work (mapping/strategies/fused_nodes.h):
// when a folded module is found beside its Conv, and the origins and
// primary answers on real exports against their truth.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapped_fixture.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/origin_table.h"
#include "mapping/strategies/fused_nodes.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"
#include "semmap/truth.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::Manifest;
using semmap::ModuleId;
using semmap::NodeId;
using semmap::internal::MappingRecord;
using semmap::internal::OpTraits;
using semmap::internal::OriginTable;
using semmap::internal::RecordFoldedNeighbours;

// block.conv (weight [4,3,3,3], no bias), block.bn (per-channel vectors of
// `bn_channels` and a scalar step count; with `statistics` false only a
// weight and a bias, as a LayerNorm), block.relu.
Manifest FoldedManifest(int bn_channels, bool statistics = true) {
  const std::string c = std::to_string(bn_channels);
  const std::string vec = R"({"name":"NAME","shape":[)" + c + R"(],"dtype":"float32"})";
  auto v = [&](const std::string& name) {
    std::string s = vec;
    s.replace(s.find("NAME"), 4, name);
    return s;
  };
  const std::string json =
      R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[)"
      R"({"path":"","class":"M","qualified_class":"t.M","parent":null,"children":["block"],"parameters":[],"buffers":[]},)"
      R"({"path":"block","class":"B","qualified_class":"t.B","parent":"","children":["block.conv","block.bn","block.relu"],"parameters":[],"buffers":[]},)"
      R"({"path":"block.conv","class":"Conv2d","qualified_class":"t.Conv2d","parent":"block","children":[],)"
      R"("parameters":[{"name":"weight","shape":[4,3,3,3],"dtype":"float32"}],"buffers":[]},)"
      R"({"path":"block.bn","class":"BatchNorm2d","qualified_class":"t.BatchNorm2d","parent":"block","children":[],)"
      R"("parameters":[)" + v("weight") + "," + v("bias") + R"(],"buffers":[)" +
      (statistics ? v("running_mean") + "," + v("running_var") +
                        R"(,{"name":"num_batches_tracked","shape":[],"dtype":"int64"})"
                  : std::string()) +
      R"(]},)"
      R"({"path":"block.relu","class":"ReLU","qualified_class":"t.ReLU","parent":"block","children":[],"parameters":[],"buffers":[]}]})";
  auto m = Manifest::Parse(json, "folded manifest");
  REQUIRE(m.ok());
  return *std::move(m);
}

void AddInitializer(onnx::GraphProto* g, const std::string& name, std::vector<std::int64_t> dims) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) t->add_dims(d);
}

// A TorchScript-like export with the BatchNorm folded: one Conv reading
// anonymous folded weights, a Reshape of the bias, a Relu.
Graph FoldedGraph() {
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  AddInitializer(g, "onnx::Conv_7", {4, 3, 3, 3});
  AddInitializer(g, "onnx::Conv_8", {4});
  semmap_test::AddNode(g, "/block/conv/Conv", "Conv", {"x", "onnx::Conv_7", "onnx::Conv_8"}, {"c"});
  semmap_test::AddNode(g, "/block/conv/Reshape", "Reshape", {"onnx::Conv_8", "shape"}, {"r"});
  semmap_test::AddNode(g, "/block/relu/Relu", "Relu", {"c"}, {"y"});
  auto graph = Graph::Parse(semmap_test::Serialize(model), "folded");
  REQUIRE(graph.ok());
  return *std::move(graph);
}

std::vector<MappingRecord> Records(const Manifest& m, const std::vector<std::string>& paths) {
  std::vector<MappingRecord> records(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    records[i].module = m.find(paths[i]);
    records[i].confidence = 1.0;
  }
  return records;
}

TEST_CASE("RecordFoldedNeighbours: a BatchNorm left without a node beside its Conv") {
  const Graph g = FoldedGraph();
  // The origins found with manifest `m` when the graph's three nodes are
  // mapped to `paths`.
  auto origins_with = [&](const Manifest& m, const std::vector<std::string>& paths) {
    semmap_test::ContextParts parts(g, m, Records(m, paths));
    RecordFoldedNeighbours(parts.context());
    return std::move(parts.origins);
  };
  const std::vector<std::string> conv_conv_relu = {"block.conv", "block.conv", "block.relu"};
  SECTION("the Conv does the BatchNorm's work; the bias Reshape is data movement") {
    const Manifest m = FoldedManifest(4);
    const OriginTable origins = origins_with(m, conv_conv_relu);
    REQUIRE(origins.Of(0).size() == 2);
    CHECK(m.module(origins.Of(0)[0]).path == "block.conv");
    CHECK(m.module(origins.Of(0)[1]).path == "block.bn");
    CHECK(origins.Of(1).empty());
    CHECK(origins.Of(2).empty());
  }
  SECTION("a BatchNorm over another width was not folded into this Conv") {
    CHECK(origins_with(FoldedManifest(5), conv_conv_relu).size() == 0);
  }
  SECTION("a norm without running statistics (a LayerNorm) is never folded") {
    CHECK(origins_with(FoldedManifest(4, /*statistics=*/false), conv_conv_relu).size() == 0);
  }
  SECTION("a BatchNorm with a node of its own was not folded") {
    CHECK(origins_with(FoldedManifest(4), {"block.conv", "block.conv", "block.bn"}).size() == 0);
  }
}

TEST_CASE("RecordFoldedNeighbours walks each parent's children once", "[waits]") {
  // 200,000 modules with a weight under the root: searching the siblings
  // for each module took 7.8 s.
  constexpr int kModules = 200000;
  std::string children, modules;
  for (int i = 0; i < kModules; ++i) {
    const std::string path = "m" + std::to_string(i);
    children += (i ? ",\"" : "\"") + path + "\"";
    modules += R"(,{"path":")" + path +
               R"(","class":"Linear","qualified_class":"t.Linear","parent":"","children":[],)"
               R"("parameters":[{"name":"weight","shape":[4,4],"dtype":"float32"}],"buffers":[]})";
  }
  auto m = Manifest::Parse(
      R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},)"
      R"("modules":[{"path":"","class":"M","qualified_class":"t.M","parent":null,"children":[)" +
          children + R"(],"parameters":[],"buffers":[]})" + modules + "]}",
      "flat.json");
  REQUIRE(m.ok());
  const Graph g = FoldedGraph();
  semmap_test::ContextParts parts(g, *m);
  const OriginTable& origins = parts.origins;
  // Run again on a busy moment: it records nothing here, so each run costs
  // the same.
  const double seconds =
      semmap_test::FastestSeconds(1.0, [&] { RecordFoldedNeighbours(parts.context()); });
  CAPTURE(seconds);
  CHECK(seconds < 1.0 * semmap_test::TimeScale());
  CHECK(origins.size() == 0);  // no sibling holds running statistics
}

// Every fused node of the truth, on a real export: the mapper's primary
// answer and its origins (as sets) against the truth's.
struct FusedTally {
  std::size_t fused = 0, exact = 0, right_module = 0, spurious = 0;
};

FusedTally TallyFused(const std::string& dir) {
  const std::unique_ptr<semmap_test::MappedFixture> f = semmap_test::LoadMapped(dir);
  auto truth = semmap::GroundTruth::Load(semmap_test::Fixture(dir, "truth.json"));
  REQUIRE(truth.ok());
  FusedTally t;
  for (NodeId i = 0; i < static_cast<NodeId>(f->graph->size()); ++i) {
    const std::string id(f->graph->node(i).id);
    std::vector<std::string> listed;
    for (absl::string_view o : f->mapper->originPathsOf(i)) listed.emplace_back(o);
    std::sort(listed.begin(), listed.end());
    const std::vector<std::string>* parts = truth->originsOf(id);
    if (parts == nullptr) {
      t.spurious += !listed.empty();
      continue;
    }
    ++t.fused;
    t.exact += listed == *parts;
    const std::string* expected = truth->find(id);
    t.right_module += expected != nullptr && f->mapper->moduleFor(i).module_path == *expected;
  }
  return t;
}

TEST_CASE("Folded BatchNorms on a real CNN: origins and the Conv as the answer") {
  // torchvision's ResNet-18: TorchScript folds each BatchNorm into its Conv
  // (no metadata), dynamo's optimizer rewrites them (metadata names the
  // BatchNorm), onnxslim keeps the dynamo file's fold without the metadata.
  for (const char* dir : {"torch-2.15/tv-resnet18.torchscript", "torch-2.15/tv-resnet18.dynamo",
                          "torch-2.15/tv-resnet18.dynamo.onnxslim",
                          "torch-2.15/tv-resnet18.torchscript.onnxslim"}) {
    INFO(dir);
    const FusedTally t = TallyFused(dir);
    CHECK(t.fused == 20);  // 20 Conv+BatchNorm pairs
    CHECK(t.exact == t.fused);
    CHECK(t.right_module == t.fused);
    CHECK(t.spurious == 0);
  }
}

TEST_CASE("A fold rewritten by dynamo's optimizer, quantized: the Conv through its DequantizeLinear") {
  // Freshly initialised weights: every BatchNorm is the identity up to its
  // epsilon, so the fold leaves each Conv its own weight and no bias, read
  // through the QDQ quantizer's DequantizeLinear; the metadata names the
  // BatchNorm. The answer is the Conv whose weight the node reads, below
  // the confident floor; never the BatchNorm at 0.9.
  const std::string dir = "fresh-weights/resnet-imgcls.dynamo.qdq";
  const std::unique_ptr<semmap_test::MappedFixture> f = semmap_test::LoadMapped(dir);
  auto truth = semmap::GroundTruth::Load(semmap_test::Fixture(dir, "truth.json"));
  REQUIRE(truth.ok());
  std::size_t convs = 0;
  for (NodeId i = 0; i < static_cast<NodeId>(f->graph->size()); ++i) {
    const semmap::Node n = f->graph->node(i);
    if (n.op_type != "Conv") continue;
    ++convs;
    const semmap::Mapping m = f->mapper->moduleFor(i);
    const std::string* expected = truth->find(n.id);
    REQUIRE(expected != nullptr);
    CAPTURE(n.name, m.module_path, m.evidence);
    CHECK(m.module_path == *expected);
    CHECK(m.class_name == "Conv2d");
    CHECK(m.confidence < semmap::kConfidentFloor);
  }
  CHECK(convs == 6);  // the tiny config's stem and two stages
  const semmap::TruthScore score = semmap::ScoreAgainstTruth(*f->mapper, *truth);
  CHECK(score.buckets.at(0).correct == score.buckets.at(0).count);  // nothing wrong at 0.9
}

TEST_CASE("A block's two folded Convs are told apart") {
  const std::unique_ptr<semmap_test::MappedFixture> f =
      semmap_test::LoadMapped("torch-2.15/tv-resnet18.dynamo");
  std::vector<std::string> block_convs;
  for (NodeId i = 0; i < static_cast<NodeId>(f->graph->size()); ++i) {
    const semmap::Mapping m = f->mapper->moduleFor(i);
    if (f->graph->node(i).op_type == "Conv" &&
        absl::StartsWith(m.module_path, "layer1.0.")) {
      block_convs.emplace_back(m.module_path);
      CHECK(m.class_name == "Conv2d");
      CHECK(m.confidence < semmap::kConfidentFloor);  // rewritten: below the floor
    }
  }
  CHECK(block_convs == std::vector<std::string>{"layer1.0.conv1", "layer1.0.conv2"});
}

TEST_CASE("ONNX Runtime fusions carry the reference's parts") {
  // FusedConv (Conv + Relu) after a session of ORT: primary the Conv.
  const FusedTally t = TallyFused("torch-2.15/tv-resnet18.dynamo.ort-session");
  CHECK(t.fused == 20);
  CHECK(t.right_module == t.fused);
  CHECK(t.spurious == 0);
}

}  // namespace
