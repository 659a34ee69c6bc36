// Per-node op kinds (mapping/core/op_traits.h) from the rules' patterns,
// the shape operands of an op, and which nodes compute a shape.
#include <fstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/core/op_traits.h"
#include "nlohmann/json.hpp"
#include "semmap/graph.h"
#include "semmap/rules.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::NodeId;
using semmap::Rules;
using semmap::internal::OpKind;
using semmap::internal::OpTraits;
using semmap_test::AddNode;

NodeId Find(const Graph& g, const std::string& name) {
  const NodeId id = g.find(name);
  REQUIRE(id != semmap::kNoNode);
  return id;
}

// x -> Shape -> Gather(idx) -> Concat(Constant) -> Reshape(x, _) -> Add(w)
// -> QuantizeLinear; Gather is listed before the Shape it reads.
Graph ShapeGraph() {
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  g->add_input()->set_name("x");
  semmap_test::AddInitializer(g, "idx", {1});
  semmap_test::AddInitializer(g, "w", {4});
  AddNode(g, "gather", "Gather", {"shape", "idx"}, {"dim"});
  AddNode(g, "shape", "Shape", {"x"}, {"shape"});
  AddNode(g, "constant", "Constant", {}, {"minus_one"});
  AddNode(g, "concat", "Concat", {"dim", "minus_one"}, {"new_shape"});
  AddNode(g, "reshape", "Reshape", {"x", "new_shape"}, {"r"});
  AddNode(g, "add", "Add", {"r", "w"}, {"a"});
  AddNode(g, "quantize", "QuantizeLinear", {"a"}, {"q"});
  AddNode(g, "ms_add", "Add", {"a", "w"}, {"b"})->set_domain("com.microsoft");
  return semmap_test::ParseGraph(model);
}

// Pins that the kinds are the rules' (default and edited), per node.
TEST_CASE("OpTraits gives each node the kinds its op type's rules name") {
  const Graph g = ShapeGraph();
  const OpTraits ops(g, Rules::Default());
  CHECK(ops.IsShapeSource(Find(g, "shape")));
  CHECK_FALSE(ops.IsShapeSource(Find(g, "gather")));
  CHECK(ops.TakesShapeOperands(Find(g, "reshape")));
  CHECK_FALSE(ops.TakesShapeOperands(Find(g, "concat")));
  CHECK(ops.IsQuantizerOp(Find(g, "quantize")));
  CHECK(ops.FollowsConsumers(Find(g, "quantize")));
  CHECK(ops.FollowsConsumers(Find(g, "constant")));
  CHECK_FALSE(ops.IsQuantizerOp(Find(g, "add")));
  CHECK(ops.IsWeightPassthrough(Find(g, "reshape")));
  CHECK(ops.Is(Find(g, "add"), OpKind::kCommutative));
  // Commutative only in the default domain.
  CHECK(semmap::internal::IsCommutative(ops, Find(g, "add"), g.node(Find(g, "add"))));
  CHECK_FALSE(
      semmap::internal::IsCommutative(ops, Find(g, "ms_add"), g.node(Find(g, "ms_add"))));
  CHECK_FALSE(semmap::internal::IsCommutative(ops, Find(g, "concat"), g.node(Find(g, "concat"))));

  // A rule file that calls Gather a shape source and no op a quantizer's.
  std::ifstream in(std::string(SEMMAP_SOURCE_DIR) + "/rules/default.json");
  REQUIRE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["shape_source_ops"]["pattern"] = "^(Gather)$";
  doc["quantized_ops"]["pattern"] = "^$";
  auto rules = Rules::Parse(doc.dump(), "edited.json");
  REQUIRE(rules.ok());
  const OpTraits edited(g, *rules);
  CHECK(edited.IsShapeSource(Find(g, "gather")));
  CHECK_FALSE(edited.IsShapeSource(Find(g, "shape")));
  CHECK_FALSE(edited.IsQuantizerOp(Find(g, "quantize")));
}

// Pins ReadsAsArgument: only an op of shape operands, and only for an
// input after its first.
TEST_CASE("A Reshape reads its shape as an argument and its data as data") {
  const Graph g = ShapeGraph();
  const OpTraits ops(g, Rules::Default());
  const NodeId reshape = Find(g, "reshape");
  CHECK(semmap::internal::ReadsAsArgument(g, ops, reshape, g.value("new_shape", 0)));
  CHECK_FALSE(semmap::internal::ReadsAsArgument(g, ops, reshape, g.value("x", 0)));
  CHECK_FALSE(
      semmap::internal::ReadsAsArgument(g, ops, Find(g, "concat"), g.value("minus_one", 0)));
}

// Pins ShapeComputations: a shape source and what only shape computations,
// constants and initializers feed is one; a node reading a graph input is
// not; a constant alone is not; and a node listed before its producer is
// settled by the second sweep.
TEST_CASE("ShapeComputations marks the nodes that compute a shape") {
  const Graph g = ShapeGraph();
  const OpTraits ops(g, Rules::Default());
  const std::vector<bool> shape = semmap::internal::ShapeComputations(g, ops);
  REQUIRE(shape.size() == g.size());
  CHECK(shape[Find(g, "shape")]);
  CHECK(shape[Find(g, "gather")]);  // before its producer in the list
  CHECK(shape[Find(g, "concat")]);  // a shape and a Constant
  CHECK_FALSE(shape[Find(g, "constant")]);
  CHECK_FALSE(shape[Find(g, "reshape")]);  // reads the graph input x
  CHECK_FALSE(shape[Find(g, "add")]);
  CHECK_FALSE(shape[Find(g, "quantize")]);

  const Graph empty = semmap_test::ParseGraph(semmap_test::MakeModel());
  CHECK(semmap::internal::ShapeComputations(empty, OpTraits(empty, Rules::Default())).empty());
}

}  // namespace
