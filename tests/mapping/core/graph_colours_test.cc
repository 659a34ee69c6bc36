// Colour refinement over a graph's main body (mapping/core/graph_colours.h):
// what makes two nodes' colours equal, after kNearRounds and once stable.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/core/graph_colours.h"
#include "mapping/core/op_traits.h"
#include "semmap/graph.h"
#include "semmap/rules.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::NodeId;
using semmap::internal::ColourInput;
using semmap::internal::GraphColours;
using semmap::internal::OpTraits;
using semmap_test::AddNode;

// A graph's colours, values without a producer anchored by `anchor`.
struct Coloured {
  explicit Coloured(const Graph& graph) : g(graph), ops(graph, semmap::Rules::Default()),
                                           constant(graph.size(), 0) {}
  ColourInput input(std::function<std::uint64_t(absl::string_view)> anchor) const {
    return {&g, std::move(anchor), &constant, &ops};
  }
  std::uint64_t near(const std::string& node) const { return colours.near[Find(node)]; }
  std::uint64_t far(const std::string& node) const { return colours.far[Find(node)]; }
  NodeId Find(const std::string& node) const {
    const NodeId id = g.find(node);
    REQUIRE(id != semmap::kNoNode);
    return id;
  }
  const Graph& g;
  const OpTraits ops;
  std::vector<char> constant;
  GraphColours colours;
};

std::uint64_t NoAnchor(absl::string_view) { return 0; }

void Colour(Coloured* a, Coloured* b,
            const std::function<std::uint64_t(absl::string_view)>& anchor = NoAnchor) {
  semmap::internal::ColourGraphs(a->input(anchor), b->input(anchor), &a->colours, &b->colours);
}

// How TwoChains departs from the plain pair: the Tanh chain written first,
// and its node `rewired` (-1: none) reading `reads` instead of the node
// before it.
struct ChainEdits {
  bool tanh_first = false;
  int rewired = -1;
  std::string reads;
};

// Two chains from x, alike for `relus` Relus, then a Sigmoid or a Tanh;
// node names carry `tag`.
Graph TwoChains(int relus, const std::string& tag, const ChainEdits& edits = {}) {
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  g->add_input()->set_name("x");
  const std::vector<std::string> ends = edits.tanh_first ? std::vector<std::string>{"Tanh", "Sigmoid"}
                                                         : std::vector<std::string>{"Sigmoid", "Tanh"};
  for (const std::string& end : ends) {
    std::string previous = "x";
    for (int i = 0; i <= relus; ++i) {
      const std::string name = tag + end + std::to_string(i);
      const bool rewired = end == "Tanh" && i == edits.rewired;
      AddNode(g, name, i < relus ? "Relu" : end, {rewired ? edits.reads : previous}, {name + "_out"});
      previous = name + "_out";
    }
  }
  return semmap_test::ParseGraph(model);
}

// Pins that names play no part (a renamed copy colours node for node the
// same), that kNearRounds see three hops and no further, and that the
// stable colours tell apart what differs farther downstream.
TEST_CASE("Colours see neighbourhoods, not names: near within three hops, far until stable") {
  const Graph a = TwoChains(6, "a_"), b = TwoChains(6, "renamed_");
  Coloured ca(a), cb(b);
  Colour(&ca, &cb);
  REQUIRE(ca.colours.near.size() == a.size());
  REQUIRE(ca.colours.far.size() == a.size());
  for (NodeId i = 0; i < static_cast<NodeId>(a.size()); ++i) {
    CHECK(ca.colours.near[i] == cb.colours.near[i]);
    CHECK(ca.colours.far[i] == cb.colours.far[i]);
  }
  // The chains' first Relus differ six hops downstream only.
  CHECK(ca.near("a_Sigmoid0") == ca.near("a_Tanh0"));
  CHECK(ca.far("a_Sigmoid0") != ca.far("a_Tanh0"));
  // Their third Relus are three hops from the end.
  CHECK(ca.near("a_Sigmoid3") != ca.near("a_Tanh3"));
  // In a chain of two the first Relus see the end within the near rounds.
  const Graph short_chains = TwoChains(2, "s_");
  Coloured cs(short_chains), cs2(short_chains);
  Colour(&cs, &cs2);
  CHECK(cs.near("s_Sigmoid0") != cs.near("s_Tanh0"));
}

// y = op(x, w) for one op and input order.
Graph Binary(const std::string& op, bool swapped, const std::string& weight = "w") {
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  g->add_input()->set_name("x");
  semmap_test::AddInitializer(g, weight, {4}, /*with_data=*/false);
  if (swapped) {
    AddNode(g, "n", op, {weight, "x"}, {"y"});
  } else {
    AddNode(g, "n", op, {"x", weight}, {"y"});
  }
  AddNode(g, "after", "Relu", {"y"}, {"z"});
  return semmap_test::ParseGraph(model);
}

// Pins the anchors (values without a producer coloured by the name the
// caller gives them, unknown ones alike) and the commutative ops' inputs
// compared as a multiset.
TEST_CASE("Anchors and commutative inputs decide the colours of what reads them") {
  const auto by_name = [](absl::string_view v) -> std::uint64_t {
    return v == "x" ? 11 : v == "w" ? 22 : v == "w2" ? 33 : 0;
  };
  {
    const Graph a = Binary("Add", false), b = Binary("Add", true);
    Coloured ca(a), cb(b);
    Colour(&ca, &cb, by_name);
    CHECK(ca.far("n") == cb.far("n"));  // Add commutes
    CHECK(ca.far("after") == cb.far("after"));
  }
  {
    const Graph a = Binary("Sub", false), b = Binary("Sub", true);
    Coloured ca(a), cb(b);
    Colour(&ca, &cb, by_name);
    CHECK(ca.far("n") != cb.far("n"));  // Sub does not
  }
  {
    const Graph a = Binary("Sub", false), b = Binary("Sub", false, "w2");
    Coloured ca(a), cb(b);
    Colour(&ca, &cb, by_name);
    CHECK(ca.near("n") != cb.near("n"));  // another weight
    Coloured ua(a), ub(b);
    Colour(&ua, &ub);  // unknown anchors: the weights' names play no part
    CHECK(ua.near("n") == ub.near("n"));
  }
}

// Pins that nodes of subgraph bodies get colour 0 and that a node marked
// constant is told apart from the same op unmarked.
TEST_CASE("Subgraph nodes are not coloured; constant nodes are told apart") {
  onnx::GraphProto* body = nullptr;
  onnx::ModelProto model = semmap_test::MakeNestedIfModel(1, &body);
  AddNode(body, "inner", "Relu", {"c"}, {"d"});
  AddNode(model.mutable_graph(), "k1", "Constant", {}, {"k1_out"});
  AddNode(model.mutable_graph(), "k2", "Constant", {}, {"k2_out"});
  const Graph g = semmap_test::ParseGraph(model);
  Coloured a(g), b(g);
  b.constant[a.Find("k2")] = 1;
  Colour(&a, &b);
  CHECK(a.far("inner") == 0);
  CHECK(a.near("inner") == 0);
  CHECK(a.far("/If") != 0);
  CHECK(a.far("k1") == a.far("k2"));
  CHECK(b.far("k1") != b.far("k2"));
}

// Pins ColouredAlikeByPosition: true exactly where the refinement could not
// tell node i of one graph from node i of the other (a renamed copy in the
// same order), false for a copy re-sorted, rewired, anchored otherwise or
// with subgraphs, whose colours it leaves to the refinement.
TEST_CASE("Graphs coloured alike by position: renamed copies, not re-sorted or rewired ones") {
  using semmap::internal::ColouredAlikeByPosition;
  const auto by_name = [](absl::string_view v) -> std::uint64_t {
    return v == "x" ? 11 : v == "w" ? 22 : v == "w2" ? 33 : 0;
  };
  {
    const Graph a = TwoChains(4, "a_"), b = TwoChains(4, "renamed_");
    Coloured ca(a), cb(b);
    CHECK(ColouredAlikeByPosition(ca.input(NoAnchor), cb.input(NoAnchor)));
    Colour(&ca, &cb);
    CHECK(ca.colours.far == cb.colours.far);
    CHECK(ca.colours.near == cb.colours.near);
  }
  {
    // The same nodes, the two chains in the other order.
    ChainEdits reordered;
    reordered.tanh_first = true;
    const Graph a = TwoChains(4, "a_"), resorted = TwoChains(4, "b_", reordered);
    Coloured ca(a), cb(resorted);
    CHECK_FALSE(ColouredAlikeByPosition(ca.input(NoAnchor), cb.input(NoAnchor)));
  }
  {
    // Sub's operands swapped: the same ops and values, read at other places.
    const Graph a = Binary("Sub", false), b = Binary("Sub", true);
    Coloured ca(a), cb(b);
    CHECK_FALSE(ColouredAlikeByPosition(ca.input(by_name), cb.input(by_name)));
    // Add's too: its inputs are a multiset to the refinement, but not here.
    const Graph c = Binary("Add", false), d = Binary("Add", true);
    Coloured cc(c), cd(d);
    CHECK_FALSE(ColouredAlikeByPosition(cc.input(by_name), cd.input(by_name)));
  }
  {
    // Another weight at the same place: alike only when the anchors agree.
    const Graph a = Binary("Sub", false), b = Binary("Sub", false, "w2");
    Coloured ca(a), cb(b);
    CHECK_FALSE(ColouredAlikeByPosition(ca.input(by_name), cb.input(by_name)));
    CHECK(ColouredAlikeByPosition(ca.input(NoAnchor), cb.input(NoAnchor)));
  }
  {
    // One node reading the first Relu's output instead of the second's.
    const Graph a = TwoChains(4, "a_");
    ChainEdits rewire;
    rewire.rewired = 3;
    rewire.reads = "r_Sigmoid1_out";
    const Graph rewired = TwoChains(4, "r_", rewire);
    Coloured ca(a), cb(rewired);
    CHECK_FALSE(ColouredAlikeByPosition(ca.input(NoAnchor), cb.input(NoAnchor)));
    Colour(&ca, &cb);
    CHECK(ca.colours.far != cb.colours.far);
  }
  {
    onnx::GraphProto* body = nullptr;
    onnx::ModelProto model = semmap_test::MakeNestedIfModel(1, &body);
    AddNode(body, "inner", "Relu", {"c"}, {"d"});
    const Graph g = semmap_test::ParseGraph(model);
    Coloured ca(g), cb(g);
    CHECK_FALSE(ColouredAlikeByPosition(ca.input(NoAnchor), cb.input(NoAnchor)));
  }
}

}  // namespace
