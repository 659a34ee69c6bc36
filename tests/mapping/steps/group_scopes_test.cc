// The mapper's first step (mapping/steps/group_scopes.h): nodes grouped by
// the scope their name or module stack gives, each name parsed once.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/steps/group_scopes.h"
#include "semmap/graph.h"
#include "semmap/rules.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::Rules;
using semmap_test::NamedGraph;

TEST_CASE("GroupScopes groups nodes by scope and parses each once") {
  const Graph g = NamedGraph({"/enc/layer.0/MatMul", "/enc/layer.0/Add", "/enc/layer.1/MatMul",
                              "Identity_3", "/enc/layer.0/Relu"});
  const semmap::internal::GraphScopes scopes = semmap::internal::GroupScopes(g, Rules::Default());
  REQUIRE(scopes.of_node.size() == 5);
  CHECK(scopes.all.size() == 2);
  REQUIRE(scopes.of_node[0] != nullptr);
  CHECK(scopes.of_node[0] == scopes.of_node[1]);
  CHECK(scopes.of_node[0] == scopes.of_node[4]);
  CHECK(scopes.of_node[0]->nodes == 3);
  CHECK(scopes.of_node[2]->nodes == 1);
  CHECK(scopes.of_node[3] == nullptr);  // no scope, no metadata
  REQUIRE(scopes.ordered.size() == 2);
  CHECK(scopes.ordered[0] == scopes.of_node[0]);  // layer.0 sorts before layer.1
  const std::vector<std::pair<std::string, std::string>> derived =
      semmap::internal::DerivedModulePaths(scopes);
  REQUIRE(derived.size() == 2);
  CHECK(derived[0].first == "enc.layer.0");
  CHECK(derived[1].first == "enc.layer.1");
}

TEST_CASE("GroupScopes on a graph large enough to be read on two cores") {
  // 70,000 nodes (above internal::kParallelNodes): name scopes alternating
  // in runs, one with a derived name, and module stacks in both halves.
  // Every node must get the scope a one-node graph of it would give.
  constexpr int kNodes = 70000;
  onnx::ModelProto model = semmap_test::MakeModel();
  std::string previous = "x";
  for (int i = 0; i < kNodes; ++i) {
    const std::string out = "v" + std::to_string(i);
    std::string name = "/enc/layer." + std::to_string(i / 3 % 50) + "/Relu_" + std::to_string(i);
    if (i >= 60000 && i % 10 == 1) name = "/late/Relu_" + std::to_string(i);  // second half only
    if (i % 1000 == 7) name = "stack_" + std::to_string(i);
    if (i == 5) name = "/enc/x_output_0_QuantizeLinear";  // derived: no scope
    onnx::NodeProto* node = semmap_test::AddNode(model.mutable_graph(), name, "Relu",
                                                 {previous}, {out});
    if (i % 1000 == 7) {
      const std::string block =
          i >= 50000 && i % 2000 == 7 ? "late" : std::to_string(i / 1000 % 4);
      semmap_test::AddNodeMetadata(node, "pkg.torch.onnx.name_scopes",
                                   "['', 'dec', 'dec.block." + block + "', 'relu']");
      semmap_test::AddNodeMetadata(node, "pkg.torch.onnx.class_hierarchy",
                                   "['M', 'D', 'B" + std::to_string(i) + "', 'relu']");
    }
    previous = out;
  }
  auto g = Graph::Parse(semmap_test::Serialize(model), "test");
  REQUIRE(g.ok());
  const auto scopes = semmap::internal::GroupScopes(*g, Rules::Default());
  REQUIRE(scopes.of_node.size() == static_cast<std::size_t>(kNodes));
  CHECK(scopes.all.size() == 50 + 4 + 2);
  CHECK(scopes.of_node[5] == nullptr);
  std::size_t counted = 0;
  for (const auto& scope : scopes.all) counted += scope.nodes;
  CHECK(counted == static_cast<std::size_t>(kNodes) - 1);
  for (int i = 0; i < kNodes; ++i) {
    if (i == 5) continue;
    const semmap::internal::Scope* s = scopes.of_node[static_cast<std::size_t>(i)];
    REQUIRE(s != nullptr);
    if (i % 1000 == 7) {
      REQUIRE(s->from_metadata);
      CHECK(s->text == "dec.block." + (i >= 50000 && i % 2000 == 7
                                           ? std::string("late")
                                           : std::to_string(i / 1000 % 4)));
    } else if (i >= 60000 && i % 10 == 1) {
      REQUIRE_FALSE(s->from_metadata);
      CHECK(s->key == "/late");
      REQUIRE(s->segments.size() == 1);
      CHECK(s->segments[0] == "late");
    } else {
      REQUIRE_FALSE(s->from_metadata);
      REQUIRE(s->segments.size() == 2);
      CHECK(s->segments[1] == "layer." + std::to_string(i / 3 % 50));
    }
  }
  // The class is the first node's that named the stack (node order, not
  // the order of the halves).
  const semmap::internal::Scope* block1 = scopes.of_node[1007];
  CHECK(block1->qualified_class == "B1007");
  CHECK(scopes.of_node[50007]->qualified_class == "B50007");  // first met in the second half
  CHECK(scopes.of_node[52007] == scopes.of_node[50007]);
  // Scopes are numbered in the order the nodes first name them, across
  // the halves: the first half's, then the second half's new ones.
  std::vector<const semmap::internal::Scope*> first_met;
  for (const semmap::internal::Scope* s : scopes.of_node) {
    if (s != nullptr && std::find(first_met.begin(), first_met.end(), s) == first_met.end()) {
      first_met.push_back(s);
    }
  }
  REQUIRE(first_met.size() == scopes.all.size());
  for (std::size_t k = 0; k < first_met.size(); ++k) CHECK(first_met[k] == &scopes.all[k]);
}

}  // namespace
