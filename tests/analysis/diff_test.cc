#include <algorithm>
#include <string>

#include "catch2/catch.hpp"
#include "mapped_fixture.h"
#include "nlohmann/json.hpp"
#include "semmap/diff.h"
#include "semmap/semmap.h"

using semmap::DiffModels;
using semmap::FusionGroup;
using semmap::ModelDiff;
using semmap::ModuleDelta;
using semmap_test::LoadMapped;

namespace {

const ModuleDelta* FindModule(const ModelDiff& d, const std::string& path) {
  for (const ModuleDelta& m : d.modules) {
    if (m.path == path) return &m;
  }
  return nullptr;
}

const FusionGroup* FindGroup(const ModelDiff& d, const std::string& module) {
  for (const FusionGroup& g : d.fusions) {
    if (g.mapped && g.module == module) return &g;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("Diff of BERT against its ORT-optimized export finds each fusion", "[diff][fixture]") {
  auto plain = LoadMapped("bert-seqcls.torchscript");
  auto optimized = LoadMapped("bert-seqcls.torchscript.ort-optimized");
  auto d = DiffModels(*plain->mapper, *optimized->mapper);
  REQUIRE(d.ok());
  CHECK(d->nodes_a == plain->graph->size());
  CHECK(d->nodes_b == optimized->graph->size());
  CHECK(d->module_overlap > 0.5);
  CHECK(d->moved.empty());

  // Attention_1 replaces layer 1's self-attention, its Linear nodes included.
  const FusionGroup* attention = FindGroup(*d, "bert.encoder.layer.1.attention.self");
  REQUIRE(attention != nullptr);
  REQUIRE(attention->fused.size() == 1);
  CHECK(attention->fused[0].name == "Attention_1");
  CHECK(attention->fused[0].op_type == "com.microsoft.Attention");
  auto replaced = [&](const std::string& name) {
    return std::any_of(attention->replaced.begin(), attention->replaced.end(),
                       [&](const semmap::DiffNode& n) { return n.name == name; });
  };
  CHECK(replaced("/bert/encoder/layer.1/attention/self/query/MatMul"));
  CHECK(replaced("/bert/encoder/layer.1/attention/self/Softmax"));
  CHECK_FALSE(replaced("/bert/encoder/layer.0/attention/self/Softmax"));

  const FusionGroup* embeddings = FindGroup(*d, "bert.embeddings");
  REQUIRE(embeddings != nullptr);
  CHECK(std::any_of(embeddings->fused.begin(), embeddings->fused.end(),
                    [](const semmap::DiffNode& n) {
                      return n.op_type == "com.microsoft.EmbedLayerNormalization";
                    }));

  const ModuleDelta* query = FindModule(*d, "bert.encoder.layer.1.attention.self.query");
  REQUIRE(query != nullptr);
  CHECK(query->own_a == 2);
  CHECK(query->own_b == 0);
  CHECK(query->ops_a.at("MatMul") == 1);
  CHECK(query->changed());
  const ModuleDelta* self = FindModule(*d, "bert.encoder.layer.1.attention.self");
  REQUIRE(self != nullptr);
  CHECK(self->ops_b.at("com.microsoft.Attention") == 1);

  // Every A-only node is either replaced or removed, exactly once.
  std::size_t only_a = d->removed.size();
  for (const FusionGroup& g : d->fusions) only_a += g.replaced.size();
  CHECK(only_a == d->nodes_a - d->common_nodes);

  const nlohmann::json j = nlohmann::json::parse(semmap::ModelDiffJson(*d));
  CHECK(j.at("format") == "semmap.diff");
  CHECK(j.at("b").at("nodes") == optimized->graph->size());
  CHECK(j.at("fusions").size() == d->fusions.size());
}

TEST_CASE("Diff of a model against itself is empty", "[diff][fixture]") {
  auto a = LoadMapped("gpt2-causal-lm.torchscript");
  auto b = LoadMapped("gpt2-causal-lm.torchscript");
  auto d = DiffModels(*a->mapper, *b->mapper);
  REQUIRE(d.ok());
  CHECK(d->common_nodes == a->graph->size());
  CHECK(d->module_overlap == 1.0);
  CHECK(d->moved.empty());
  CHECK(d->fusions.empty());
  CHECK(d->removed.empty());
  CHECK(std::none_of(d->modules.begin(), d->modules.end(),
                     [](const ModuleDelta& m) { return m.changed(); }));
}

TEST_CASE("Diff across exporters compares modules, not node names", "[diff][fixture]") {
  auto ts = LoadMapped("bert-seqcls.torchscript");
  auto dynamo = LoadMapped("bert-seqcls.dynamo");
  auto d = DiffModels(*ts->mapper, *dynamo->mapper);
  REQUIRE(d.ok());
  CHECK(d->common_nodes == 0);
  CHECK(d->module_overlap > 0.9);
  // TorchScript spells GELU out with Erf; dynamo keeps one Gelu node.
  const ModuleDelta* gelu = FindModule(*d, "bert.encoder.layer.0.intermediate.intermediate_act_fn");
  REQUIRE(gelu != nullptr);
  CHECK(gelu->ops_a.count("Erf") == 1);
  CHECK(gelu->ops_b.at("Gelu") == 1);
}

TEST_CASE("Diff refuses unrelated models", "[diff][fixture]") {
  auto bert = LoadMapped("bert-seqcls.torchscript");
  auto gpt2 = LoadMapped("gpt2-causal-lm.torchscript");
  auto classes = DiffModels(*bert->mapper, *gpt2->mapper);
  REQUIRE(classes.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(classes.status().message()),
             Catch::Contains("BertForSequenceClassification") && Catch::Contains("GPT2LMHeadModel"));

  // GPT-2's graph mapped against BERT's manifest (which the mapper refuses
  // unless told to go on): almost nothing lands.
  semmap::MapperOptions anyway;
  anyway.allow_manifest_mismatch = true;
  auto misread = semmap::SemanticMapper::Create(*gpt2->graph, &*bert->manifest, anyway);
  REQUIRE(misread.ok());
  auto overlap = DiffModels(*bert->mapper, *misread);
  REQUIRE(overlap.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(overlap.status().message()), Catch::Contains("need 10%"));
}
