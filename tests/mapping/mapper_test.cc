#include <fstream>
#include <string>

#include "catch2/catch.hpp"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"
#include "test_util.h"

using semmap::Graph;
using semmap::Manifest;
using semmap::SemanticMapper;
using semmap::Strategy;
using semmap_test::AddNode;
using semmap_test::Fixture;
using semmap_test::MakeModel;
using semmap_test::ManifestJson;
using semmap_test::Serialize;

namespace {

struct Loaded {
  Graph graph;
  Manifest manifest;
};

Loaded LoadFixture(const std::string& dir) {
  auto g = Graph::Load(Fixture(dir, "model.onnx"));
  REQUIRE(g.ok());
  auto m = Manifest::Load(Fixture(dir, "manifest.json"));
  REQUIRE(m.ok());
  return {*std::move(g), *std::move(m)};
}

// The manifest of the submodule at `prefix` of a real manifest, as the
// exporter would write it for that submodule alone (paths re-rooted).
std::string SubManifest(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in);
  auto strip = [&](const std::string& p) {
    return p == prefix ? std::string() : p.substr(prefix.size() + 1);
  };
  auto inside = [&](const std::string& p) {
    return p == prefix || p.rfind(prefix + ".", 0) == 0;
  };
  nlohmann::json modules = nlohmann::json::array();
  for (const auto& m : doc["modules"]) {
    const std::string p = m["path"];
    if (!inside(p)) continue;
    nlohmann::json copy = m;
    copy["path"] = strip(p);
    copy["parent"] = p == prefix ? nlohmann::json() : nlohmann::json(strip(m["parent"]));
    nlohmann::json children = nlohmann::json::array();
    for (const auto& c : m["children"]) children.push_back(strip(c));
    copy["children"] = children;
    if (copy.contains("forward")) {  // calls by path, re-rooted too
      for (auto& event : copy["forward"]) {
        if (event.contains("call")) event["call"] = strip(event["call"]);
      }
    }
    if (p == prefix) doc["model"]["class"] = m["class"];
    if (p == prefix) doc["model"]["qualified_class"] = m["qualified_class"];
    modules.push_back(copy);
  }
  doc["modules"] = modules;
  return doc.dump();
}

}  // namespace

TEST_CASE("BERT TorchScript: the query projection maps by exact scope", "[mapper][fixture]") {
  Loaded f = LoadFixture("bert-seqcls.torchscript");
  auto mapper = SemanticMapper::Create(f.graph, &f.manifest);
  REQUIRE(mapper.ok());
  auto m = mapper->moduleFor("/bert/encoder/layer.0/attention/self/query/MatMul");
  REQUIRE(m.ok());
  CHECK(m->module_path == "bert.encoder.layer.0.attention.self.query");
  CHECK(m->class_name == "Linear");
  CHECK(m->qualified_class == "torch.nn.modules.linear.Linear");
  CHECK(m->strategy == Strategy::kExactScope);
  CHECK(m->confidence == 1.0);
  CHECK(mapper->rootBinding().root == 0);
  CHECK(mapper->rootBinding().wrapper.empty());

  // Functional ops inside a module belong to that module.
  auto matmul1 = mapper->moduleFor("/bert/encoder/layer.0/attention/self/MatMul_1");
  REQUIRE(matmul1.ok());
  CHECK(matmul1->module_path == "bert.encoder.layer.0.attention.self");
  const semmap::ModuleId self = f.manifest.find("bert.encoder.layer.0.attention.self");
  CHECK(matmul1->class_name == f.manifest.module(self).class_name);
  CHECK(matmul1->module == self);
  // Ops in the root's own forward belong to the root.
  auto classifier = mapper->moduleFor("/classifier/Gemm");
  REQUIRE(classifier.ok());
  CHECK(classifier->module_path == "classifier");

  auto missing = mapper->moduleFor("/no/such/Node");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(mapper->mappedCount() == f.graph.size());
}

TEST_CASE("ResNet: a called container repeats its name in the scope", "[mapper][fixture]") {
  Loaded f = LoadFixture("resnet-imgcls.torchscript");
  auto mapper = SemanticMapper::Create(f.graph, &f.manifest);
  REQUIRE(mapper.ok());
  auto m = mapper->moduleFor("/resnet/encoder/stages.0/layers.0/layer/layer.0/convolution/Conv");
  REQUIRE(m.ok());
  CHECK(m->module_path == "resnet.encoder.stages.0.layers.0.layer.0.convolution");
  CHECK(m->class_name == "Conv2d");
  CHECK(m->strategy == Strategy::kExactScope);
  auto head = mapper->moduleFor("/classifier/classifier.1/Gemm");
  REQUIRE(head.ok());
  CHECK(head->module_path == "classifier.1");
}

TEST_CASE("ONNX root wrapping the manifest root: task-model names, base-model manifest",
          "[mapper][fixture]") {
  auto g = Graph::Load(Fixture("bert-seqcls.torchscript", "model.onnx"));
  REQUIRE(g.ok());
  auto base = Manifest::Parse(
      SubManifest(Fixture("bert-seqcls.torchscript", "manifest.json"), "bert"), "bert.json");
  REQUIRE(base.ok());
  REQUIRE(base->modelClass() == "BertModel");
  auto mapper = SemanticMapper::Create(*g, &*base);
  REQUIRE(mapper.ok());
  REQUIRE(mapper->rootBinding().wrapper == std::vector<std::string>{"bert"});
  auto m = mapper->moduleFor("/bert/encoder/layer.0/attention/self/query/MatMul");
  REQUIRE(m.ok());
  CHECK(m->module_path == "encoder.layer.0.attention.self.query");
  CHECK(m->strategy == Strategy::kExactScope);
  CHECK(m->confidence == 1.0);
  // The classifier lives outside a BertModel manifest: never an exact answer.
  auto head = mapper->moduleFor("/classifier/Gemm");
  REQUIRE(head.ok());
  CHECK(head->strategy != Strategy::kExactScope);
  CHECK(head->confidence < 0.9);
}

TEST_CASE("ONNX root inside the manifest: a submodule exported alone", "[mapper]") {
  auto manifest = Manifest::Parse(
      ManifestJson({"encoder", "encoder.layer", "encoder.layer.0", "encoder.layer.0.fc",
                    "encoder.layer.1", "encoder.layer.1.fc", "decoder", "decoder.fc"}),
      "m.json");
  REQUIRE(manifest.ok());
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("x");
  AddNode(graph, "/layer.0/fc/MatMul", "MatMul", {"x", "w0"}, {"a"});
  AddNode(graph, "/layer.1/fc/MatMul", "MatMul", {"a", "w1"}, {"b"});
  AddNode(graph, "/Relu", "Relu", {"b"}, {"y"});
  auto g = Graph::Parse(Serialize(model), "enc.onnx");
  REQUIRE(g.ok());
  auto mapper = SemanticMapper::Create(*g, &*manifest);
  REQUIRE(mapper.ok());
  CHECK(manifest->module(mapper->rootBinding().root).path == "encoder");
  CHECK(mapper->moduleFor(0).module_path == "encoder.layer.0.fc");
  CHECK(mapper->moduleFor(1).module_path == "encoder.layer.1.fc");
  CHECK(mapper->moduleFor(2).module_path == "encoder");
  CHECK(mapper->moduleFor(2).strategy == Strategy::kExactScope);
}

TEST_CASE("A module called twice: the _N scope suffix folds to the module", "[mapper]") {
  auto manifest = Manifest::Parse(
      ManifestJson({"layer4", "layer4.1", "layer4.1.relu", "layer4.1.conv_1"}), "m.json");
  REQUIRE(manifest.ok());
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("x");
  AddNode(graph, "/layer4/layer4.1/relu/Relu", "Relu", {"x"}, {"a"});
  AddNode(graph, "/layer4/layer4.1/relu_1/Relu", "Relu", {"a"}, {"b"});
  AddNode(graph, "/layer4/layer4.1/conv_1/Conv", "Conv", {"b"}, {"c"});
  AddNode(graph, "/layer4/layer4.1/conv_1_1/Conv", "Conv", {"c"}, {"d"});
  auto g = Graph::Parse(Serialize(model), "r.onnx");
  REQUIRE(g.ok());
  auto mapper = SemanticMapper::Create(*g, &*manifest);
  REQUIRE(mapper.ok());
  CHECK(mapper->moduleFor(0).module_path == "layer4.1.relu");
  CHECK(mapper->moduleFor(0).confidence == 1.0);
  CHECK(mapper->moduleFor(1).module_path == "layer4.1.relu");
  CHECK(mapper->moduleFor(1).strategy == Strategy::kExactScope);
  CHECK(mapper->moduleFor(1).confidence < 1.0);
  // A real module name ending in _1 is taken literally first.
  CHECK(mapper->moduleFor(2).module_path == "layer4.1.conv_1");
  CHECK(mapper->moduleFor(3).module_path == "layer4.1.conv_1");
}

TEST_CASE("Scopes deeper than the manifest map to the deepest known module", "[mapper]") {
  auto manifest = Manifest::Parse(ManifestJson({"a", "a.b"}), "m.json");
  REQUIRE(manifest.ok());
  auto model = MakeModel();
  AddNode(model.mutable_graph(), "/a/b/hidden/inner/Add", "Add", {"x", "y"}, {"z"});
  auto g = Graph::Parse(Serialize(model), "d.onnx");
  REQUIRE(g.ok());
  auto mapper = SemanticMapper::Create(*g, &*manifest);
  REQUIRE(mapper.ok());
  const semmap::Mapping& m = mapper->moduleFor(0);
  CHECK(m.module_path == "a.b");
  CHECK(m.strategy == Strategy::kScopePrefix);
  CHECK(m.confidence > 0.0);
  CHECK(m.confidence < 1.0);
}

TEST_CASE("Unscoped nodes: constants follow their consumers, joins take the LCA",
          "[mapper]") {
  auto manifest = Manifest::Parse(ManifestJson({"a", "a.x", "a.y", "b"}), "m.json");
  REQUIRE(manifest.ok());
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("in");
  AddNode(graph, "Constant_7", "Constant", {}, {"k"});
  AddNode(graph, "/a/x/Mul", "Mul", {"in", "k"}, {"p"});
  AddNode(graph, "/a/y/Relu", "Relu", {"in"}, {"q"});
  AddNode(graph, "Add_3", "Add", {"p", "q"}, {"s"});
  AddNode(graph, "/a/x/Neg", "Neg", {"s"}, {"t"});
  AddNode(graph, "Orphan_1", "Relu", {"nowhere"}, {"unused"});
  auto g = Graph::Parse(Serialize(model), "n.onnx");
  REQUIRE(g.ok());
  auto mapper = SemanticMapper::Create(*g, &*manifest);
  REQUIRE(mapper.ok());
  CHECK(mapper->moduleFor(0).module_path == "a.x");
  CHECK(mapper->moduleFor(0).strategy == Strategy::kOpRule);
  CHECK(mapper->moduleFor(0).confidence >= 0.8);
  CHECK(mapper->moduleFor(3).module_path == "a");
  // A join's LCA is an inference: reported as the rules' calibration says
  // such answers are right, below the confident floor.
  CHECK(mapper->moduleFor(3).confidence < 0.9);
  CHECK(mapper->moduleFor(5).strategy == Strategy::kUnmapped);
  CHECK(mapper->moduleFor(5).confidence == 0.0);
  CHECK_FALSE(mapper->moduleFor(5).mapped());
  CHECK(mapper->strategyCounts()[static_cast<int>(Strategy::kUnmapped)] == 1);
}

TEST_CASE("Cycles, dangling inputs and duplicate names terminate", "[mapper]") {
  auto manifest = Manifest::Parse(ManifestJson({"a"}), "m.json");
  REQUIRE(manifest.ok());
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  AddNode(graph, "X_1", "Add", {"c", "dangling"}, {"a1"});
  AddNode(graph, "X_1", "Add", {"a1"}, {"b1"});
  AddNode(graph, "", "Add", {"b1"}, {"c"});
  AddNode(graph, "/a/Relu", "Relu", {"c"}, {"out"});
  auto g = Graph::Parse(Serialize(model), "cycle.onnx");
  REQUIRE(g.ok());
  auto mapper = SemanticMapper::Create(*g, &*manifest);
  REQUIRE(mapper.ok());
  CHECK(mapper->moduleFor(3).module_path == "a");
  for (const semmap::Mapping& m : mapper->mapAll()) {
    CHECK(m.confidence >= 0.0);
    CHECK(m.confidence <= 1.0);
  }
}

TEST_CASE("Without a manifest, paths come from scopes and metadata", "[mapper][fixture]") {
  SECTION("TorchScript names") {
    auto g = Graph::Load(Fixture("bert-seqcls.torchscript", "model.onnx"));
    REQUIRE(g.ok());
    auto mapper = SemanticMapper::Create(*g, nullptr);
    REQUIRE(mapper.ok());
    CHECK_FALSE(mapper->hasManifest());
    auto m = mapper->moduleFor("/bert/encoder/layer.0/attention/self/query/MatMul");
    REQUIRE(m.ok());
    CHECK(m->module_path == "bert.encoder.layer.0.attention.self.query");
    CHECK(m->class_name.empty());
    CHECK(m->confidence > 0.5);
    CHECK(m->confidence < 1.0);
  }
  SECTION("dynamo metadata names the classes") {
    auto g = Graph::Load(Fixture("bert-seqcls.dynamo", "model.onnx"));
    REQUIRE(g.ok());
    auto mapper = SemanticMapper::Create(*g, nullptr);
    REQUIRE(mapper.ok());
    std::size_t linear = 0;
    for (const semmap::Mapping& m : mapper->mapAll()) {
      if (m.module_path == "bert.encoder.layer.0.attention.self.query") {
        CHECK(m.class_name == "Linear");
        CHECK(m.strategy == Strategy::kExporterMetadata);
        ++linear;
      }
    }
    CHECK(linear >= 1);
  }
}

TEST_CASE("Dynamo export: module stacks in metadata resolve exactly", "[mapper][fixture]") {
  Loaded f = LoadFixture("bert-seqcls.dynamo");
  auto mapper = SemanticMapper::Create(f.graph, &f.manifest);
  REQUIRE(mapper.ok());
  const auto counts = mapper->strategyCounts();
  CHECK(counts[static_cast<int>(Strategy::kExporterMetadata)] > f.graph.size() / 2);
  std::size_t query = 0;
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(f.graph.size()); ++i) {
    const semmap::Mapping& m = mapper->moduleFor(i);
    if (m.module_path == "bert.encoder.layer.0.attention.self.query") {
      CHECK(m.class_name == "Linear");
      CHECK(m.confidence == 1.0);
      ++query;
    }
  }
  CHECK(query >= 1);
}

TEST_CASE("tensor_names: fused nodes keep scoped outputs; weights name their module",
          "[mapper][strategy]") {
  // Modules as an optimizer-fused attention block leaves them. ManifestJson
  // gives no parameters: add dense.bias and norm.weight.
  std::string json = ManifestJson({"enc", "enc.att", "enc.att.dense", "enc.att.norm", "enc.ffn"});
  const std::string dense = R"("path":"enc.att.dense","class":"M","qualified_class":"t.M","parent":"enc.att","children":[],"parameters":[])";
  const std::string norm = R"("path":"enc.att.norm","class":"M","qualified_class":"t.M","parent":"enc.att","children":[],"parameters":[])";
  REQUIRE(json.find(dense) != std::string::npos);
  REQUIRE(json.find(norm) != std::string::npos);
  json.replace(json.find(dense), dense.size(),
               R"("path":"enc.att.dense","class":"M","qualified_class":"t.M","parent":"enc.att","children":[],"parameters":[{"name":"bias","shape":[4],"dtype":"float32"}])");
  json.replace(json.find(norm), norm.size(),
               R"("path":"enc.att.norm","class":"M","qualified_class":"t.M","parent":"enc.att","children":[],"parameters":[{"name":"weight","shape":[4],"dtype":"float32"}])");
  auto m = Manifest::Parse(json, "m.json");
  REQUIRE(m.ok());

  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("x");
  for (const char* name : {"enc.att.dense.bias", "enc.att.norm.weight"}) {
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(1);
    t->add_dims(4);
  }
  // A fused SkipLayerNorm: reads dense's bias and norm's weight, writes the
  // value named after norm's output.
  AddNode(graph, "SkipLayerNorm_AddBias_0", "SkipLayerNormalization",
          {"x", "enc.att.dense.bias", "enc.att.norm.weight"},
          {"/enc/att/norm/LayerNormalization_output_0"});
  // A fused node known only by its output name.
  AddNode(graph, "Attention_0", "Attention", {"/enc/att/norm/LayerNormalization_output_0"},
          {"/enc/att/Reshape_3_output_0"});
  auto g = Graph::Parse(Serialize(model), "fused.onnx");
  REQUIRE(g.ok());
  auto mapper = SemanticMapper::Create(*g, &*m);
  REQUIRE(mapper.ok());

  const semmap::Mapping& skip = mapper->moduleFor(0);
  CHECK(skip.strategy == Strategy::kTensorNames);
  CHECK(skip.module_path == "enc.att");  // LCA of dense and norm
  CHECK(skip.confidence > 0.0);
  CHECK(skip.confidence < 0.9);  // sources disagree

  const semmap::Mapping& attention = mapper->moduleFor(1);
  CHECK(attention.strategy == Strategy::kTensorNames);
  CHECK(attention.module_path == "enc.att");
  CHECK(attention.confidence >= 0.8);
}

TEST_CASE("Shape computations follow the node that uses the shape", "[mapper][strategy]") {
  auto manifest = Manifest::Parse(ManifestJson({"a", "a.x", "b"}), "m.json");
  REQUIRE(manifest.ok());
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("in");
  AddNode(graph, "/b/Relu", "Relu", {"in"}, {"h"});        // another module's output
  AddNode(graph, "n1", "Shape", {"h"}, {"s"});              // unnamed shape chain
  AddNode(graph, "n2", "Constant", {}, {"i"});
  AddNode(graph, "n3", "Gather", {"s", "i"}, {"d"});
  AddNode(graph, "n4", "Unsqueeze", {"d"}, {"shape"});
  AddNode(graph, "/a/x/Reshape", "Reshape", {"h", "shape"}, {"r"});
  auto g = Graph::Parse(Serialize(model), "shape.onnx");
  REQUIRE(g.ok());
  auto mapper = SemanticMapper::Create(*g, &*manifest);
  REQUIRE(mapper.ok());
  for (semmap::NodeId i : {1, 3, 4}) {
    CAPTURE(g->node(i).name);
    CHECK(mapper->moduleFor(i).module_path == "a.x");
    CHECK(mapper->moduleFor(i).strategy == Strategy::kOpRule);
  }
}
