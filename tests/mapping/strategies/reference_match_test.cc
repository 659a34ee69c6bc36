// Pairing the nodes of a post-processed copy with the export it came from
// (mapping/strategies/reference_match.h): by name, by structure, constants
// by position, fused nodes by the span they replaced; spans bounded.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/strategies/reference_match.h"
#include "onnx/onnx_pb.h"
#include "semmap/semmap.h"
#include "test_util.h"

using semmap::Graph;
using semmap::NodeId;
using semmap::Rules;
using semmap::internal::MatchRule;
using semmap::internal::MatchToReference;
using semmap::internal::NodeMatch;
using semmap_test::AddInitializer;
using semmap_test::AddNode;
using semmap_test::MakeModel;
using semmap_test::ParseGraph;

namespace {

std::vector<NodeMatch> Match(const Graph& p, const Graph& r) {
  return MatchToReference(p, r, Rules::Default());
}

// The R node a P node was paired with, by R node name ("" when none).
std::string PairedName(const std::vector<NodeMatch>& m, const Graph& p, const Graph& r,
                       const std::string& p_name) {
  const NodeId id = p.find(p_name);
  REQUIRE(id != semmap::kNoNode);
  if (m[id].reference_nodes.size() != 1) return "";
  return std::string(r.node(m[id].reference_nodes[0]).name);
}

}  // namespace

TEST_CASE("Structural numbering pairs renamed nodes and values", "[reference]") {
  // R: x -> Shape -> Gather(_, const) ; x + w -> Relu -> Add(_, w2) -> y
  onnx::ModelProto r = MakeModel();
  auto* rg = r.mutable_graph();
  rg->add_input()->set_name("x");
  AddInitializer(rg, "enc.w", {4});
  AddInitializer(rg, "enc.w2", {4});
  AddNode(rg, "/enc/Shape", "Shape", {"x"}, {"/enc/Shape_output_0"});
  AddNode(rg, "/enc/Constant", "Constant", {}, {"/enc/Constant_output_0"});
  AddNode(rg, "/enc/Gather", "Gather", {"/enc/Shape_output_0", "/enc/Constant_output_0"},
          {"/enc/Gather_output_0"});
  AddNode(rg, "/enc/Add", "Add", {"x", "enc.w"}, {"/enc/Add_output_0"});
  AddNode(rg, "/enc/act/Relu", "Relu", {"/enc/Add_output_0"}, {"/enc/act/Relu_output_0"});
  AddNode(rg, "/enc/Add_1", "Add", {"/enc/act/Relu_output_0", "enc.w2"}, {"y"});
  rg->add_output()->set_name("y");

  // P: names n<i>, values v<i>, reordered, operands of the commutative Add
  // swapped.
  onnx::ModelProto p = MakeModel();
  auto* pg = p.mutable_graph();
  pg->add_input()->set_name("x");
  AddInitializer(pg, "enc.w", {4});
  AddInitializer(pg, "enc.w2", {4});
  AddNode(pg, "n0", "Add", {"enc.w", "x"}, {"v0"});
  AddNode(pg, "n1", "Relu", {"v0"}, {"v1"});
  AddNode(pg, "n2", "Add", {"v1", "enc.w2"}, {"y"});
  AddNode(pg, "n3", "Constant", {}, {"v3"});
  AddNode(pg, "n4", "Shape", {"x"}, {"v4"});
  AddNode(pg, "n5", "Gather", {"v4", "v3"}, {"v5"});
  pg->add_output()->set_name("y");

  const Graph rgraph = ParseGraph(r), pgraph = ParseGraph(p);
  const auto m = Match(pgraph, rgraph);
  CHECK(PairedName(m, pgraph, rgraph, "n0") == "/enc/Add");
  CHECK(PairedName(m, pgraph, rgraph, "n1") == "/enc/act/Relu");
  CHECK(PairedName(m, pgraph, rgraph, "n2") == "/enc/Add_1");
  CHECK(PairedName(m, pgraph, rgraph, "n4") == "/enc/Shape");
  CHECK(PairedName(m, pgraph, rgraph, "n5") == "/enc/Gather");
  CHECK(PairedName(m, pgraph, rgraph, "n3") == "/enc/Constant");
  CHECK(m[pgraph.find("n1")].rule == MatchRule::kStructure);
  CHECK(m[pgraph.find("n3")].rule == MatchRule::kConstantOf);
}

TEST_CASE("A node with different inputs is not paired", "[reference]") {
  onnx::ModelProto r = MakeModel();
  auto* rg = r.mutable_graph();
  rg->add_input()->set_name("x");
  AddInitializer(rg, "w", {4});
  AddNode(rg, "/a/Sub", "Sub", {"x", "w"}, {"s"});
  onnx::ModelProto p = MakeModel();
  auto* pg = p.mutable_graph();
  pg->add_input()->set_name("x");
  AddInitializer(pg, "w", {4});
  AddNode(pg, "n0", "Sub", {"w", "x"}, {"v0"});  // Sub is not commutative
  AddNode(pg, "n1", "Div", {"x", "w"}, {"v1"});  // another op
  const Graph rgraph = ParseGraph(r), pgraph = ParseGraph(p);
  const auto m = Match(pgraph, rgraph);
  CHECK(m[0].rule == MatchRule::kNone);
  CHECK(m[1].rule == MatchRule::kNone);
}

TEST_CASE("Fused nodes stand for the span they replaced; derived names", "[reference]") {
  // R: MatMul -> Add(bias) -> LayerNormalization, plus an unrelated branch.
  onnx::ModelProto r = MakeModel();
  auto* rg = r.mutable_graph();
  rg->add_input()->set_name("x");
  AddInitializer(rg, "w", {4, 4});
  AddInitializer(rg, "b", {4});
  AddNode(rg, "/l/dense/MatMul", "MatMul", {"x", "w"}, {"/l/dense/MatMul_output_0"});
  AddNode(rg, "/l/dense/Add", "Add", {"/l/dense/MatMul_output_0", "b"}, {"/l/dense/Add_output_0"});
  AddNode(rg, "/l/norm/LayerNormalization", "LayerNormalization", {"/l/dense/Add_output_0"},
          {"/l/norm/LayerNormalization_output_0"});
  AddNode(rg, "/l/other/Relu", "Relu", {"x"}, {"/l/other/Relu_output_0"});

  onnx::ModelProto p = MakeModel();
  auto* pg = p.mutable_graph();
  pg->add_input()->set_name("x");
  AddInitializer(pg, "w_quantized", {4, 4});
  AddInitializer(pg, "w_scale", {1});
  AddInitializer(pg, "b", {4});
  // Keeps the output name of the last node it replaced.
  AddNode(pg, "Fused_0", "FusedDenseNorm", {"x", "w", "b"},
          {"/l/norm/LayerNormalization_output_0"});
  AddNode(pg, "/l/dense/MatMul_quant", "MatMulInteger", {"x", "w_quantized"}, {"q"});
  AddNode(pg, "/l/dense/MatMul_output_0_QuantizeLinear", "DynamicQuantizeLinear",
          {"/l/dense/MatMul_output_0"}, {"dq"});
  AddNode(pg, "n9", "MatMul", {"x", "w_quantized"}, {"v9"});  // shape kept: the weight

  const Graph rgraph = ParseGraph(r), pgraph = ParseGraph(p);
  const auto m = Match(pgraph, rgraph);
  const NodeMatch& fused = m[pgraph.find("Fused_0")];
  CHECK(fused.rule == MatchRule::kSpan);
  CHECK(fused.reference_nodes.size() == 3);  // MatMul, Add, LayerNormalization
  CHECK(m[pgraph.find("/l/dense/MatMul_quant")].rule == MatchRule::kDerivedName);
  CHECK(PairedName(m, pgraph, rgraph, "/l/dense/MatMul_quant") == "/l/dense/MatMul");
  // Named after a value: no claim on the value's producer.
  CHECK(m[pgraph.find("/l/dense/MatMul_output_0_QuantizeLinear")].rule == MatchRule::kNone);
  CHECK(PairedName(m, pgraph, rgraph, "n9") == "/l/dense/MatMul");
}

TEST_CASE("Span walks are bounded; long chains match in linear time", "[reference]") {
  constexpr int kChain = 20000;
  onnx::ModelProto r = MakeModel();
  onnx::ModelProto p = MakeModel();
  auto* rg = r.mutable_graph();
  auto* pg = p.mutable_graph();
  rg->add_input()->set_name("x");
  pg->add_input()->set_name("x");
  for (int i = 0; i < kChain; ++i) {
    const std::string in = i == 0 ? "x" : "r" + std::to_string(i - 1);
    AddNode(rg, "/m/Relu_" + std::to_string(i), "Relu", {in}, {"r" + std::to_string(i)});
    const std::string pin = i == 0 ? "x" : "p" + std::to_string(i - 1);
    AddNode(pg, "n" + std::to_string(i), "Relu", {pin}, {"p" + std::to_string(i)});
  }
  // A fused node writing the chain's last value from the graph input: its
  // span would be the whole chain.
  AddNode(pg, "Fused", "Whole", {"x"}, {"r" + std::to_string(kChain - 1)});
  const Graph rgraph = ParseGraph(r), pgraph = ParseGraph(p);
  semmap::internal::MatchLimits limits;
  limits.max_span_nodes = 100;
  const auto m = MatchToReference(pgraph, rgraph, Rules::Default(), limits);
  std::size_t structural = 0;
  for (int i = 0; i < kChain; ++i) structural += m[i].rule == MatchRule::kStructure;
  CHECK(structural == kChain);
  const NodeMatch& fused = m[pgraph.find("Fused")];
  CHECK(fused.rule == MatchRule::kSpan);
  CHECK(fused.reference_nodes.size() == 1);  // fell back to the producer
}

TEST_CASE("Span walks are bounded by the consumer edges they visit", "[reference]") {
  // A value read by many nodes (a mask read by every layer), and a fused
  // node reading it: the forward walk stops instead of scanning them all.
  constexpr int kFanOut = 1000;
  onnx::ModelProto r = MakeModel();
  auto* rg = r.mutable_graph();
  rg->add_input()->set_name("x");
  AddNode(rg, "/m/Relu", "Relu", {"x"}, {"mask"});
  for (int i = 0; i < kFanOut; ++i) {
    AddNode(rg, "/l/Add_" + std::to_string(i), "Add", {"mask", "x"}, {"a" + std::to_string(i)});
  }
  AddNode(rg, "/l/Neg", "Neg", {"a7"}, {"out"});
  onnx::ModelProto p = MakeModel();
  auto* pg = p.mutable_graph();
  pg->add_input()->set_name("x");
  AddNode(pg, "/m/Relu", "Relu", {"x"}, {"mask"});
  AddNode(pg, "Fused", "AddNeg", {"mask", "x"}, {"out"});
  const Graph rgraph = ParseGraph(r), pgraph = ParseGraph(p);
  semmap::internal::MatchLimits limits;
  limits.max_span_nodes = 16;  // 64 edges
  const NodeMatch wide = MatchToReference(pgraph, rgraph, Rules::Default(), limits)[1];
  CHECK(wide.rule == MatchRule::kSpan);
  REQUIRE(wide.reference_nodes.size() == 1);
  CHECK(rgraph.node(wide.reference_nodes[0]).name == "/l/Neg");
  const NodeMatch full = MatchToReference(pgraph, rgraph, Rules::Default())[1];
  CHECK(full.reference_nodes.size() == 2);  // Add_7 and Neg
}

namespace {

// Matches compared field by field; the first difference named.
void CheckSameMatches(const std::vector<NodeMatch>& a, const std::vector<NodeMatch>& b) {
  REQUIRE(a.size() == b.size());
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].rule == b[i].rule && a[i].reference_nodes == b[i].reference_nodes &&
        a[i].ambiguous == b[i].ambiguous) {
      continue;
    }
    if (differing++ == 0) first = i;
  }
  CAPTURE(first);
  CHECK(differing == 0);
}

onnx::ModelProto LoadModelProto(const std::string& dir) {
  std::ifstream in(semmap_test::Fixture(dir, "model.onnx"), std::ios::binary);
  REQUIRE(in);
  onnx::ModelProto model;
  REQUIRE(model.ParseFromIstream(&in));
  return model;
}

}  // namespace

// Pins the colours on demand (MatchLimits::colours_on_demand): a copy that
// keeps the export's node order pairs without the refinement, and every
// copy pairs exactly as with both graphs coloured first: a re-sorted one
// and one rewired so slightly that only one node's input changed.
TEST_CASE("Colours on demand pair as colouring first: kept order, re-sorted, rewired",
          "[reference]") {
  const std::string source = "torch-2.15/bert-seqcls.torchscript";
  const Graph r = semmap_test::LoadGraph(source);
  semmap::internal::MatchLimits eager;
  eager.colours_on_demand = false;
  const auto compare = [&](const Graph& p, bool aligned) {
    semmap::internal::MatchTrace trace, eager_trace;
    const auto on_demand = MatchToReference(p, r, Rules::Default(), {}, &trace);
    const auto first = MatchToReference(p, r, Rules::Default(), eager, &eager_trace);
    CHECK(trace.aligned == aligned);
    CHECK(trace.coloured != aligned);
    CHECK(eager_trace.coloured);
    CheckSameMatches(on_demand, first);
    std::size_t structural = 0;
    for (const NodeMatch& m : on_demand) structural += m.rule == MatchRule::kStructure;
    CHECK(structural * 2 > p.size());
  };
  SECTION("names stripped, order kept") {
    compare(semmap_test::LoadGraph(source + ".stripped"), true);
  }
  SECTION("names stripped, re-sorted") {
    compare(semmap_test::LoadGraph(source + ".stripped-resorted"), false);
  }
  SECTION("names stripped, one MatMul's operands swapped") {
    onnx::ModelProto model = LoadModelProto(source + ".stripped");
    onnx::NodeProto* swapped = nullptr;
    for (onnx::NodeProto& n : *model.mutable_graph()->mutable_node()) {
      if (n.op_type() == "MatMul" && n.input_size() == 2) swapped = &n;
    }
    REQUIRE(swapped != nullptr);
    std::swap(*swapped->mutable_input(0), *swapped->mutable_input(1));
    compare(ParseGraph(model), false);
  }
}
