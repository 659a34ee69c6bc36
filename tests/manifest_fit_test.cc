// Whether a manifest describes the graph's model (SemanticMapper::manifestFit):
// every fixture's own manifest fits; another architecture, another size of
// the same one and a deeper variant are refused; a task model against its
// base model's manifest still maps.
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"
#include "test_util.h"

namespace {

using semmap_test::Fixture;

struct Loaded {
  semmap::Graph graph;
  semmap::Manifest manifest;
};

Loaded Load(const std::string& model_dir, const std::string& manifest_dir) {
  auto g = semmap::Graph::Load(Fixture(model_dir, "model.onnx"));
  REQUIRE(g.ok());
  auto m = semmap::Manifest::Load(Fixture(manifest_dir, "manifest.json"));
  REQUIRE(m.ok());
  return {*std::move(g), *std::move(m)};
}

TEST_CASE("Every fixture's own manifest fits", "[manifest_fit][fixture]") {
  for (const std::string prefix : {"", "torch-2.15/"}) {
    std::ifstream in(std::string(SEMMAP_FIXTURES_DIR) + "/" + prefix + "index.json");
    REQUIRE(in.good());
    const nlohmann::json index = nlohmann::json::parse(in);
    for (const auto& entry : index.at("fixtures")) {
      const std::string dir = prefix + entry.at("dir").get<std::string>();
      CAPTURE(dir);
      const Loaded l = Load(dir, dir);
      auto mapper = semmap::SemanticMapper::Create(l.graph, &l.manifest);
      REQUIRE(mapper.ok());
      CHECK(mapper->manifestFit().fits);
    }
  }
}

TEST_CASE("Manifests of other models are refused", "[manifest_fit][fixture]") {
  struct Case {
    const char* graph;
    const char* manifest;
    const char* evidence;
  };
  const Case cases[] = {
      // Another architecture.
      {"bert-seqcls.torchscript", "gpt2-causal-lm.torchscript", "is not in the manifest"},
      {"bert-seqcls.torchscript", "resnet-imgcls.torchscript", "is not in the manifest"},
      {"bert-seqcls.dynamo", "distilbert-seqcls.dynamo", "is not in the manifest"},
      // A sibling architecture with the same module paths: the dynamo
      // exporter's classes tell them apart.
      {"qwen2-causal-lm.dynamo", "llama-causal-lm.dynamo", "another class"},
      // Another size of the same architecture.
      {"bert-seqcls.torchscript", "mismatch/bert-wider", "contradict it"},
      {"bert-seqcls.torchscript.ort-optimized", "mismatch/bert-wider", "contradict it"},
      {"bert-seqcls.torchscript", "mismatch/bert-deeper", "has 4 items in the manifest"},
      {"bert-seqcls.dynamo", "mismatch/bert-deeper", "has 4 items in the manifest"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.graph, c.manifest);
    const Loaded l = Load(c.graph, c.manifest);
    auto refused = semmap::SemanticMapper::Create(l.graph, &l.manifest);
    REQUIRE_FALSE(refused.ok());
    CHECK(absl::IsFailedPrecondition(refused.status()));
    CHECK(absl::StrContains(refused.status().message(), c.evidence));

    semmap::MapperOptions anyway;
    anyway.allow_manifest_mismatch = true;
    auto mapped = semmap::SemanticMapper::Create(l.graph, &l.manifest, anyway);
    REQUIRE(mapped.ok());
    CHECK(mapped->manifestFit().checked);
    CHECK_FALSE(mapped->manifestFit().fits);
  }
}

TEST_CASE("The refusal names a scope of the graph", "[manifest_fit][fixture]") {
  const Loaded l = Load("bert-seqcls.torchscript", "gpt2-causal-lm.torchscript");
  auto refused = semmap::SemanticMapper::Create(l.graph, &l.manifest);
  REQUIRE_FALSE(refused.ok());
  // The smallest missing scope in text order, quoted as the graph spells it.
  CHECK(absl::StrContains(refused.status().message(), "(e.g. \"/bert/embeddings\" is not in the manifest)"));
}

TEST_CASE("A task model maps against its base model's manifest", "[manifest_fit][fixture]") {
  for (const char* dir : {"bert-seqcls.torchscript", "bert-seqcls.dynamo"}) {
    CAPTURE(dir);
    const Loaded l = Load(dir, "mismatch/bert-base");
    auto mapper = semmap::SemanticMapper::Create(l.graph, &l.manifest);
    REQUIRE(mapper.ok());
    CHECK(mapper->manifestFit().fits);
    CHECK(mapper->rootBinding().wrapper == std::vector<std::string>{"bert"});
    std::size_t query_nodes = 0;
    for (const semmap::Mapping& m : mapper->mapAll()) {
      query_nodes += m.module_path == "encoder.layer.0.attention.self.query" && m.confident();
    }
    CHECK(query_nodes >= 2);  // MatMul and Add
  }
}

TEST_CASE("A graph without names is not judged", "[manifest_fit][fixture]") {
  const Loaded l = Load("torch-2.15/llama-causal-lm.torchscript.stripped",
                        "torch-2.15/llama-causal-lm.torchscript.stripped");
  auto mapper = semmap::SemanticMapper::Create(l.graph, &l.manifest);
  REQUIRE(mapper.ok());
  CHECK_FALSE(mapper->manifestFit().checked);
  CHECK(mapper->manifestFit().fits);
  CHECK(absl::StrContains(mapper->manifestFit().evidence, "too few names"));
}

TEST_CASE("A scope counts for the fit only where the manifest has its literal path",
          "[manifest_fit]") {
  // "/layer1/layer1.0": the dotted path folds the container repeating its
  // name ("layer1.0"). A manifest that has "layer1.layer1.0" instead lets
  // the scope resolve step by step, yet it does not have the scope's path:
  // the fit must not count it. "/blk" resolves and has its path.
  onnx::ModelProto model = semmap_test::MakeModel();
  std::string previous = "x";
  for (int i = 0; i < 16; ++i) {
    const std::string out = "v" + std::to_string(i);
    const std::string scope = i < 8 ? "/layer1/layer1.0" : "/blk";
    semmap_test::AddNode(model.mutable_graph(), scope + "/Relu_" + std::to_string(i), "Relu",
                         {previous}, {out});
    previous = out;
  }
  auto g = semmap::Graph::Parse(semmap_test::Serialize(model), "test");
  REQUIRE(g.ok());
  auto m = semmap::Manifest::Parse(
      semmap_test::ManifestJson({"layer1", "layer1.layer1", "layer1.layer1.0", "blk"}), "test");
  REQUIRE(m.ok());
  semmap::MapperOptions options;
  options.allow_manifest_mismatch = true;
  auto mapper = semmap::SemanticMapper::Create(*g, &*m, options);
  REQUIRE(mapper.ok());
  const semmap::ManifestFit& fit = mapper->manifestFit();
  CHECK(fit.distinct_scopes == 2);
  CHECK(fit.resolved_scopes == 1);
  CHECK(fit.scoped_nodes == 16);
  CHECK(fit.resolved_nodes == 8);
  // The mapping itself follows the resolution.
  CHECK(mapper->moduleFor(0).module_path == "layer1.layer1.0");
  CHECK(mapper->moduleFor(8).module_path == "blk");
}

TEST_CASE("Confident means at or above the documented floor", "[manifest_fit]") {
  semmap::Mapping m;
  CHECK_FALSE(m.confident());
  m.module = 0;
  m.confidence = semmap::kConfidentFloor;
  CHECK(m.confident());
  m.confidence = 0.89;
  CHECK_FALSE(m.confident());
}

}  // namespace
