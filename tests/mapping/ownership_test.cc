// What the zero-copy Graph and the owning mapper promise: views stay valid
// as long as any handle lives, nothing a mapper hands out dangles when the
// objects it was made from are gone, and value ids agree with the lookups
// by name.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "mapping/core/evidence_store.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"
#include "temp_dir.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::kNoNode;
using semmap::kNoValue;
using semmap::Manifest;
using semmap::NodeId;
using semmap::SemanticMapper;
using semmap::ValueId;
using semmap_test::Fixture;

constexpr char kBert[] = "bert-seqcls.torchscript";
constexpr char kT5Dynamo[] = "t5-seq2seq-lm.dynamo";

std::vector<std::string> Names(const Graph& g) {
  std::vector<std::string> out;
  for (const semmap::Node& n : g.nodes()) out.emplace_back(n.name);
  return out;
}

TEST_CASE("A Graph copy shares the data and outlives the original") {
  std::optional<Graph> original;
  {
    auto g = Graph::Load(Fixture(kBert, "model.onnx"));
    REQUIRE(g.ok());
    original.emplace(*std::move(g));
  }
  const std::vector<std::string> names = Names(*original);
  const semmap::Node first = original->node(0);
  Graph copy = *original;
  // Shared, not copied: the copy's nodes point at the same bytes.
  CHECK(copy.node(0).name.data() == first.name.data());
  CHECK(copy.node(0).inputs.data() == first.inputs.data());
  original.reset();
  REQUIRE(copy.size() == names.size());
  CHECK(Names(copy) == names);
  CHECK(copy.node(0) == first);  // still valid: the copy keeps the data
}

TEST_CASE("Parse keeps its own copy of the bytes") {
  std::string bytes = semmap_test::ReadBytes(Fixture(kBert, "model.onnx"));
  auto g = Graph::Parse(bytes, "bert.onnx");
  REQUIRE(g.ok());
  const std::vector<std::string> names = Names(*g);
  std::fill(bytes.begin(), bytes.end(), '\0');
  bytes.clear();
  bytes.shrink_to_fit();
  CHECK(Names(*g) == names);
}

TEST_CASE("Value ids agree with the lookups by name") {
  for (const char* dir : {kBert, kT5Dynamo}) {
    auto g = Graph::Load(Fixture(dir, "model.onnx"));
    REQUIRE(g.ok());
    std::size_t checked = 0;
    for (NodeId i = 0; i < static_cast<NodeId>(g->size()); ++i) {
      const semmap::Node& n = g->node(i);
      REQUIRE(n.input_values.size() == n.inputs.size());
      REQUIRE(n.output_values.size() == n.outputs.size());
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        const ValueId v = n.input_values[k];
        CHECK(v == g->value(n.inputs[k], n.subgraph));
        CHECK(g->producer(v) == g->producer(n.inputs[k], n.subgraph));
        if (v != kNoValue) {
          CHECK(g->valueName(v) == n.inputs[k]);
          const auto consumers = g->consumers(v);
          CHECK(std::find(consumers.begin(), consumers.end(), i) != consumers.end());
          CHECK((g->initializerOf(v) != nullptr) == (g->initializer(n.inputs[k]) != nullptr));
          ++checked;
        }
      }
      for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        if (n.outputs[k].empty()) {
          CHECK(n.output_values[k] == kNoValue);
          continue;
        }
        CHECK(g->producer(n.output_values[k]) == i);
      }
    }
    CHECK(checked > g->size());  // most nodes read a value
    CHECK(g->value("no such value") == kNoValue);
    CHECK(g->producer(kNoValue) == kNoNode);
    CHECK(g->consumers(kNoValue).empty());
  }
}

TEST_CASE("A mapper made from temporaries owns what it maps with") {
  std::optional<SemanticMapper> mapper;
  std::string expected_path;
  {
    auto g = Graph::Load(Fixture(kBert, "model.onnx"));
    auto m = Manifest::Load(Fixture(kBert, "manifest.json"));
    REQUIRE(g.ok());
    REQUIRE(m.ok());
    auto created = SemanticMapper::Create(*g, &*m);
    REQUIRE(created.ok());
    mapper.emplace(*std::move(created));
    expected_path = std::string(mapper->moduleFor(0).module_path);
  }  // graph and manifest destroyed here
  REQUIRE(mapper->hasManifest());
  CHECK(mapper->moduleFor(0).module_path == expected_path);
  auto query = mapper->moduleFor("/bert/encoder/layer.0/attention/self/query/MatMul");
  REQUIRE(query.ok());
  CHECK(query->module_path == "bert.encoder.layer.0.attention.self.query");
  CHECK(query->class_name == "Linear");
  // The shared manifest keeps the mapping's views alive past the mapper.
  std::shared_ptr<const Manifest> manifest = mapper->sharedManifest();
  const semmap::Mapping copy = *query;
  mapper.reset();
  CHECK(copy.module_path == "bert.encoder.layer.0.attention.self.query");
  CHECK(manifest->find(copy.module_path) == copy.module);
}

TEST_CASE("Open loads, maps and names the files at fault") {
  auto opened = SemanticMapper::Open(Fixture(kBert, "model.onnx"), Fixture(kBert, "manifest.json"));
  REQUIRE(opened.ok());
  auto manifest = Manifest::Load(Fixture(kBert, "manifest.json"));
  REQUIRE(manifest.ok());
  // The graph argument may be a temporary: the mapper shares it.
  auto created = SemanticMapper::Create(*Graph::Load(Fixture(kBert, "model.onnx")), &*manifest);
  REQUIRE(created.ok());
  REQUIRE(opened->graph().size() == created->graph().size());
  for (NodeId i = 0; i < static_cast<NodeId>(opened->graph().size()); ++i) {
    CHECK(opened->moduleFor(i).module == created->moduleFor(i).module);
    CHECK(opened->moduleFor(i).evidence == created->moduleFor(i).evidence);
  }

  auto without = SemanticMapper::Open(Fixture(kBert, "model.onnx"), "");
  REQUIRE(without.ok());
  CHECK_FALSE(without->hasManifest());

  auto missing = SemanticMapper::Open(Fixture(kBert, "no-such.onnx"), "");
  REQUIRE(absl::IsNotFound(missing.status()));
  CHECK(missing.status().message().find("no-such.onnx") != absl::string_view::npos);

  const std::string other = Fixture("gpt2-causal-lm.torchscript", "manifest.json");
  auto misfit = SemanticMapper::Open(Fixture(kBert, "model.onnx"), other);
  REQUIRE(absl::IsFailedPrecondition(misfit.status()));
  CHECK(misfit.status().message().find("bert-seqcls.torchscript") != absl::string_view::npos);
  CHECK(misfit.status().message().find(other) != absl::string_view::npos);
}

}  // namespace

namespace {

TEST_CASE("EvidenceStore stores each text once, in place") {
  semmap::internal::EvidenceStore store;
  const absl::string_view a = store.Intern("scope /encoder/layer.0");
  const std::string big(200000, 'x');  // longer than a block
  const absl::string_view b = store.Intern(big);
  std::vector<absl::string_view> many;
  for (int i = 0; i < 20000; ++i) many.push_back(store.Intern(absl::StrCat("text ", i)));
  CHECK(store.Intern("scope /encoder/layer.0").data() == a.data());  // deduplicated
  CHECK(a == "scope /encoder/layer.0");
  CHECK(b == big);
  for (int i = 0; i < 20000; ++i) CHECK(many[static_cast<std::size_t>(i)] == absl::StrCat("text ", i));
  CHECK(store.Intern("").empty());
}

}  // namespace
