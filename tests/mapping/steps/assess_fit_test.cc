// Whether a manifest describes the graph's model (mapping/steps/assess_fit.h,
// SemanticMapper::manifestFit): every fixture's own manifest fits; another
// architecture, another size of the same one and a deeper variant are
// refused; a task model against its base model's manifest still maps.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "context_parts.h"
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
      // A twin with GroupNorm for BatchNorm, the same paths and classes in
      // TorchScript scopes: its norm nodes run no operation of the
      // manifest's signatures (schema 2).
      {"torch-2.15/timm-efficientnet-gn.torchscript", "torch-2.15/timm-efficientnet.dynamo",
       "of a kind their forward does not run"},
      // The same twin the other way: TorchScript folded every BatchNorm
      // into its Conv, which gained a bias; the manifest's modules after
      // those Convs run group_norm, which no exporter folds.
      {"torch-2.15/timm-efficientnet.torchscript", "torch-2.15/timm-efficientnet-gn.dynamo",
       "13 of 13 folds in the graph are of modules no exporter folds"},
      // Another size of the same architecture.
      {"bert-seqcls.torchscript", "mismatch/bert-wider", "contradict it"},
      {"bert-seqcls.torchscript.ort-optimized", "mismatch/bert-wider", "contradict it"},
      {"bert-seqcls.torchscript", "mismatch/bert-deeper", "has 4 items in the manifest"},
      {"bert-seqcls.dynamo", "mismatch/bert-deeper", "has 4 items in the manifest"},
      // A static QDQ file: its parameters are "<name>_quantized" read by a
      // DequantizeLinear, still of their parameters' sizes, so another
      // width shows as it does in the plain export.
      {"torch-2.15/bert-seqcls.dynamo.qdq", "torch-2.15/negative/bert-seqcls.width",
       "contradict it"},
      {"torch-2.15/bert-seqcls.torchscript.qdq", "bert-seqcls.torchscript", "contradict it"},
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

TEST_CASE("A scope counts for the fit where the manifest has its path, step by step or folded",
          "[manifest_fit]") {
  // "/layer1/layer1.0": the dotted path folds the container repeating its
  // name ("layer1.0"); a manifest that has "layer1.layer1.0" instead names
  // every step directly, which torch would also spell "/layer1/layer1.0".
  // Both count, without a note. "/other" resolves nowhere.
  onnx::ModelProto model = semmap_test::MakeModel();
  std::string previous = "x";
  for (int i = 0; i < 18; ++i) {
    const std::string out = "v" + std::to_string(i);
    const std::string scope = i < 8 ? "/layer1/layer1.0" : i < 16 ? "/blk" : "/other";
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
  options.allow_manifest_mismatch = true;  // "/other": one scope of three
  auto mapper = semmap::SemanticMapper::Create(*g, &*m, options);
  REQUIRE(mapper.ok());
  const semmap::ManifestFit& fit = mapper->manifestFit();
  CHECK(fit.distinct_scopes == 3);
  CHECK(fit.resolved_scopes == 2);
  CHECK(fit.scoped_nodes == 18);
  CHECK(fit.resolved_nodes == 16);
  CHECK(fit.notes.empty());
  CHECK(mapper->moduleFor(0).module_path == "layer1.layer1.0");
  CHECK(mapper->moduleFor(8).module_path == "blk");
}

namespace {

using Module = semmap_test::ManifestModule;
using semmap_test::ManifestWithTensors;

// A chain of Relu nodes, one per scope, and float initializers by name and dims.
semmap::Graph ChainGraph(const std::vector<std::string>& scopes,
                         const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  onnx::ModelProto model = semmap_test::MakeModel();
  std::string previous = "x";
  for (std::size_t i = 0; i < scopes.size(); ++i) {
    const std::string out = "v" + std::to_string(i);
    semmap_test::AddNode(model.mutable_graph(), scopes[i] + "/Relu", "Relu", {previous}, {out});
    previous = out;
  }
  for (const auto& [name, dims] : tensors) {
    onnx::TensorProto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
  }
  auto g = semmap::Graph::Parse(semmap_test::Serialize(model), "test");
  REQUIRE(g.ok());
  return *std::move(g);
}

const semmap::FitNote* FindNote(const semmap::ManifestFit& fit, semmap::FitNoteKind kind) {
  for (const semmap::FitNote& n : fit.notes) {
    if (n.kind == kind) return &n;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("Reasons of export fit with notes, each named", "[manifest_fit]") {
  constexpr char kLinear[] = "torch.nn.modules.linear.Linear";
  constexpr char kRelu[] = "torch.nn.modules.activation.ReLU";
  constexpr char kNorm[] = "torch.nn.modules.batchnorm.BatchNorm2d";
  const std::vector<Module> modules = {
      {"model", "Wrapper", "t.Wrapper", {}},
      {"model.decoder", "Decoder", "t.Decoder", {}},
      {"model.decoder.fc", "Linear", kLinear, {"weight:4x4", "bias:4"}},
      {"model.decoder.act", "ReLU", kRelu, {}},
      {"model.decoder.embed", "ScaledEmbedding", "t.ScaledEmbedding", {"weight:8x4"}},
      {"model.decoder.scale", "Scale", "t.Scale", {"gamma:4x1x1"}},
      {"model.decoder.block", "Sequential", "torch.nn.modules.container.Sequential", {}},
      {"model.decoder.block.0", "Linear", kLinear, {"weight:4x4"}},
      {"model.decoder.block.1", "BatchNorm2d", kNorm, {"weight:4", "bias:4"}},
  };
  auto m = semmap::Manifest::Parse(ManifestWithTensors(modules), "test");
  REQUIRE(m.ok());
  // "/decoder/...": a wrapper's forward called model.decoder directly, past
  // "model"; "act_1" is the second call of "act"; block.1 (a norm) has no
  // node left; "embed_scale" is a constant the embedding's forward made;
  // "scale.gamma" is stored as [4] for the module's [4, 1, 1].
  const semmap::Graph g = ChainGraph(
      {"/model/decoder/fc", "/model/decoder/act", "/model/decoder/act_1", "/model/decoder/embed",
       "/model/decoder/block/block.0", "/decoder/fc", "/decoder/act", "/decoder/act_1",
       "/model/decoder/scale"},
      {{"model.decoder.fc.weight", {4, 4}},
       {"model.decoder.fc.bias", {4}},
       {"model.decoder.embed.weight", {8, 4}},
       {"model.decoder.embed.embed_scale", {1}},
       {"model.decoder.scale.gamma", {4}}});
  auto mapper = semmap::SemanticMapper::Create(g, &*m);
  REQUIRE(mapper.ok());
  const semmap::ManifestFit& fit = mapper->manifestFit();
  CAPTURE(fit.evidence);
  CHECK(fit.fits);
  CHECK(fit.verdict() == "fits, with notes");
  CHECK(fit.resolved_scopes == fit.distinct_scopes);
  CHECK(fit.matched_tensors == fit.named_tensors);

  const semmap::FitNote* reused = FindNote(fit, semmap::FitNoteKind::kReusedCall);
  REQUIRE(reused != nullptr);
  CHECK(reused->count == 1);
  CHECK(reused->example == "/model/decoder/act_1");
  const semmap::FitNote* outside = FindNote(fit, semmap::FitNoteKind::kOutsideManifestRoot);
  REQUIRE(outside != nullptr);
  CHECK(outside->count == 3);  // /decoder/fc, /decoder/act, /decoder/act_1
  CHECK(outside->example == "/decoder/act");
  const semmap::FitNote* folded = FindNote(fit, semmap::FitNoteKind::kFoldedByExporter);
  REQUIRE(folded != nullptr);
  CHECK(folded->example == "model.decoder.block.1");
  const semmap::FitNote* created = FindNote(fit, semmap::FitNoteKind::kCreatedInForward);
  REQUIRE(created != nullptr);
  CHECK(created->example == "model.decoder.embed.embed_scale");
  const semmap::FitNote* reshaped = FindNote(fit, semmap::FitNoteKind::kStoredReshaped);
  REQUIRE(reshaped != nullptr);
  CHECK(reshaped->example == "model.decoder.scale.gamma");
  CHECK(semmap::FitNoteKindName(semmap::FitNoteKind::kStoredReshaped) == "stored_reshaped");
  CHECK(absl::StrContains(fit.evidence, "; notes: "));
}

TEST_CASE("What contradicts the manifest is still a misfit", "[manifest_fit]") {
  constexpr char kLinear[] = "torch.nn.modules.linear.Linear";
  const std::vector<Module> modules = {
      {"fc", "Linear", kLinear, {"weight:4x4"}},
      {"blocks", "Blocks", "t.Blocks", {}},
      {"blocks.layer1", "Layer", "t.Layer", {}},
      {"blocks.layer1.fc", "Linear", kLinear, {"weight:4x4"}},
      {"blocks.layer2", "Layer", "t.Layer", {}},
      {"blocks.layer2.fc", "Linear", kLinear, {"weight:4x4"}},
      {"blocks.layer3", "Layer", "t.Layer", {}},
      {"blocks.layer3.fc", "Linear", kLinear, {"weight:4x4"}},
  };
  auto m = semmap::Manifest::Parse(ManifestWithTensors(modules), "test");
  REQUIRE(m.ok());
  semmap::MapperOptions anyway;
  anyway.allow_manifest_mismatch = true;
  SECTION("a library module's parameter the manifest does not have") {
    const semmap::Graph g = ChainGraph(
        {"/fc", "/blocks/layer1/fc", "/blocks/layer2/fc", "/blocks/layer3/fc"},
        {{"fc.weight", {4, 4}}, {"fc.bias", {4}}, {"blocks.layer1.fc.weight", {4, 4}},
         {"blocks.layer2.fc.weight", {4, 4}}, {"blocks.layer3.fc.weight", {4, 4}}});
    auto refused = semmap::SemanticMapper::Create(g, &*m);
    REQUIRE_FALSE(refused.ok());
    CHECK(absl::StrContains(refused.status().message(),
                            "\"fc.bias\" is not a parameter of the manifest's module"));
  }
  SECTION("another depth of a named repetition (\"layer1\", \"layer2\", ...)") {
    const semmap::Graph g =
        ChainGraph({"/fc", "/blocks/layer1/fc", "/blocks/layer2/fc", "/fc_1", "/fc_2", "/fc_3",
                    "/fc_4", "/fc_5"},
                   {{"fc.weight", {4, 4}}});
    auto refused = semmap::SemanticMapper::Create(g, &*m);
    REQUIRE_FALSE(refused.ok());
    CHECK(absl::StrContains(refused.status().message(),
                            "\"blocks\" has 3 items in the manifest and the graph uses 2"));
    auto mapped = semmap::SemanticMapper::Create(g, &*m, anyway);
    REQUIRE(mapped.ok());
    CHECK(mapped->manifestFit().verdict() == "misfit");
    CHECK(mapped->manifestFit().notes.empty());
  }
}

TEST_CASE("Exports of reused modules and folded BatchNorms fit their own manifest",
          "[manifest_fit][fixture]") {
  struct Case {
    const char* dir;
    semmap::FitNoteKind kind;
    const char* example;
  };
  const Case cases[] = {
      {"torch-2.15/tv-resnet18.torchscript", semmap::FitNoteKind::kReusedCall,
       "/layer1/layer1.0/relu_1"},
      {"torch-2.15/tv-resnet18.torchscript", semmap::FitNoteKind::kFoldedByExporter,
       "layer1.0.bn2"},
      {"torch-2.15/tv-efficientnet.torchscript", semmap::FitNoteKind::kFoldedByExporter,
       "features.1.0.block.2.1"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.dir, c.example);
    const Loaded l = Load(c.dir, c.dir);
    auto mapper = semmap::SemanticMapper::Create(l.graph, &l.manifest);
    REQUIRE(mapper.ok());
    const semmap::FitNote* note = FindNote(mapper->manifestFit(), c.kind);
    REQUIRE(note != nullptr);
    CHECK(note->example == c.example);
  }
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

TEST_CASE("Which folds explain a module without nodes is rule data", "[manifest_fit][fixture][rules]") {
  // The EfficientNet twin the other way: refused with the default rules
  // (group_norm is no operation exporters fold), accepted by a rule file
  // that says exporters fold group normalisations too.
  std::ifstream in(std::string(SEMMAP_SOURCE_DIR) + "/rules/default.json");
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  REQUIRE(doc.at("folded_ops").at("torch") == "^(batch_norm)$");
  doc["folded_ops"]["torch"] = "^(batch_norm|group_norm)$";
  auto rules = semmap::Rules::Parse(doc.dump(), "folds.json");
  REQUIRE(rules.ok());
  const Loaded l = Load("torch-2.15/timm-efficientnet.torchscript", "torch-2.15/timm-efficientnet-gn.dynamo");
  REQUIRE_FALSE(semmap::SemanticMapper::Create(l.graph, &l.manifest).ok());
  semmap::MapperOptions options;
  options.rules = &*rules;
  auto mapper = semmap::SemanticMapper::Create(l.graph, &l.manifest, options);
  REQUIRE(mapper.ok());
  CHECK(mapper->manifestFit().fits);
}
