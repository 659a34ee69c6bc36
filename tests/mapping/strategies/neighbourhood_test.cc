// Neighbourhood inference (mapping/strategies/neighbourhood.h) on its own: each rule
// on a small graph, termination, and how often it is right when it fills
// the nodes of real exports that the names leave open.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapped_fixture.h"
#include "mapping/core/confidence.h"
#include "mapping/core/evidence_store.h"
#include "mapping/core/op_traits.h"
#include "mapping/strategies/neighbourhood.h"
#include "nlohmann/json.hpp"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::Manifest;
using Mapping = semmap::internal::MappingRecord;
using semmap::ModuleId;
using semmap::NodeId;
using semmap::Rules;
using semmap::Strategy;
using semmap::internal::OpTraits;
using semmap::internal::OrderHints;
namespace conf = semmap::internal::confidence::neighbourhood;

Graph Parse(const onnx::ModelProto& model) {
  auto g = Graph::Parse(semmap_test::Serialize(model), "test");
  REQUIRE(g.ok());
  return *std::move(g);
}

Mapping Answer(const Manifest& m, const std::string& path, double confidence) {
  Mapping a;
  a.module = m.find(path);
  REQUIRE(a.module != semmap::kNoModule);
  a.confidence = confidence;
  a.strategy = Strategy::kExactScope;
  return a;
}

struct Run {
  std::vector<Mapping> mappings;
  int passes = 0;
};

Run Infer(const Graph& g, const Manifest& m, std::vector<Mapping> mappings, int max_passes = 64) {
  semmap_test::ContextParts parts(g, m, std::move(mappings));
  const std::vector<bool> shape = semmap::internal::ShapeComputations(g, parts.ops);
  Run run;
  run.passes =
      semmap::internal::InferFromNeighbourhood(parts.context(), shape, OrderHints{}, max_passes);
  run.mappings = std::move(parts.records);
  // Evidence views point into `store`: only their presence is checked here.
  for (Mapping& a : run.mappings) a.evidence = a.mapped() ? "set" : "";
  return run;
}

std::string PathOf(const Manifest& m, const Mapping& a) {
  return a.mapped() ? std::string(m.path(a.module)) : "<unmapped>";
}

TEST_CASE("Neighbourhood: ops that follow their consumers take their module") {
  const Manifest m = Manifest::FromModulePaths({{"enc.a", ""}, {"enc.b", ""}});
  onnx::ModelProto model = semmap_test::MakeModel();
  using semmap_test::AddNode;
  AddNode(model.mutable_graph(), "n0", "Relu", {"x"}, {"v0"});
  AddNode(model.mutable_graph(), "cast", "Cast", {"v0"}, {"v1"});       // 1
  AddNode(model.mutable_graph(), "n2", "MatMul", {"v1", "v1"}, {"v2"});  // 2
  AddNode(model.mutable_graph(), "const", "Constant", {}, {"c"});        // 3
  AddNode(model.mutable_graph(), "n4", "Add", {"c", "v2"}, {"v4"});      // 4
  AddNode(model.mutable_graph(), "n5", "Mul", {"c", "v2"}, {"v5"});      // 5
  const Graph g = Parse(model);
  std::vector<Mapping> in(g.size());
  in[0] = Answer(m, "enc.a", 1.0);
  in[2] = Answer(m, "enc.a", 0.8);
  in[4] = Answer(m, "enc.a", 1.0);
  in[5] = Answer(m, "enc.b", 1.0);
  const Run run = Infer(g, m, in);

  // The Cast's one consumer: op rule, agreeing, times the consumer's 0.8.
  CHECK(PathOf(m, run.mappings[1]) == "enc.a");
  CHECK(run.mappings[1].strategy == Strategy::kOpRule);
  CHECK(run.mappings[1].confidence == Approx(conf::kFollowAgreeing * 0.8));
  // The Constant's consumers disagree: their common ancestor, lower.
  CHECK(PathOf(m, run.mappings[3]) == "enc");
  CHECK(run.mappings[3].strategy == Strategy::kOpRule);
  CHECK(run.mappings[3].confidence == Approx(conf::kDisagreeing));
  // Answers given in are never changed.
  CHECK(run.mappings[2].confidence == 0.8);
  CHECK(PathOf(m, run.mappings[5]) == "enc.b");
}

TEST_CASE("Neighbourhood: sources, joins and one-sided evidence") {
  const Manifest m = Manifest::FromModulePaths({{"enc.a", ""}, {"enc.b", ""}, {"dec", ""}});
  onnx::ModelProto model = semmap_test::MakeModel();
  using semmap_test::AddNode;
  AddNode(model.mutable_graph(), "src", "RandomNormal", {}, {"r"});      // 0: no producer
  AddNode(model.mutable_graph(), "n1", "Add", {"r", "x"}, {"v1"});       // 1
  AddNode(model.mutable_graph(), "n2", "Relu", {"v1"}, {"v2"});          // 2: between
  AddNode(model.mutable_graph(), "n3", "Mul", {"v2", "v2"}, {"v3"});     // 3
  AddNode(model.mutable_graph(), "n4", "Neg", {"v3"}, {"v4"});           // 4: producers only
  const Graph g = Parse(model);
  std::vector<Mapping> in(g.size());
  in[1] = Answer(m, "enc.a", 1.0);
  in[3] = Answer(m, "enc.b", 0.9);
  const Run run = Infer(g, m, in);

  CHECK(PathOf(m, run.mappings[0]) == "enc.a");
  CHECK(run.mappings[0].strategy == Strategy::kNeighbourhood);
  CHECK(run.mappings[0].confidence == Approx(conf::kSourceAgreeing));
  CHECK(PathOf(m, run.mappings[2]) == "enc");
  CHECK(run.mappings[2].confidence == Approx(conf::kBothSides * 0.9));
  // Only once two-sided evidence settled: the producers alone.
  CHECK(PathOf(m, run.mappings[4]) == "enc.b");
  CHECK(run.mappings[4].confidence == Approx(conf::kOneSide * 0.9));
  for (const Mapping& a : run.mappings) CHECK(a.mapped());
}

TEST_CASE("Neighbourhood terminates on cycles and within max_passes") {
  const Manifest m = Manifest::FromModulePaths({{"enc", ""}});
  onnx::ModelProto model = semmap_test::MakeModel();
  using semmap_test::AddNode;
  // A cycle of unmapped nodes that no mapped node touches.
  AddNode(model.mutable_graph(), "a", "Add", {"x", "c"}, {"b_in"});
  AddNode(model.mutable_graph(), "b", "Relu", {"b_in"}, {"c"});
  // A chain: mapped head, 6 unmapped Relus.
  std::string prev = "y";
  for (int i = 0; i < 7; ++i) {
    const std::string out = "y" + std::to_string(i);
    AddNode(model.mutable_graph(), "c" + std::to_string(i), "Relu", {prev}, {out});
    prev = out;
  }
  const Graph g = Parse(model);
  std::vector<Mapping> in(g.size());
  in[2] = Answer(m, "enc", 1.0);
  const Run all = Infer(g, m, in);
  CHECK_FALSE(all.mappings[0].mapped());
  CHECK_FALSE(all.mappings[1].mapped());
  CHECK(all.mappings[0].strategy == Strategy::kUnmapped);
  for (std::size_t i = 2; i < g.size(); ++i) CHECK(all.mappings[i].mapped());
  CHECK(all.passes < 64);
  // One pass without two-sided evidence maps nothing; the bound holds.
  const Run one = Infer(g, m, in, 1);
  CHECK(one.passes == 1);
  CHECK_FALSE(one.mappings[3].mapped());
}

// On real exports: forget every answer the op rules and the neighbourhood
// gave, run the step again on what the names settled, and compare what it
// fills with the truth files.
TEST_CASE("Neighbourhood inference is right on real exports") {
  // Measured (filled / correct): BERT 12 / 12, GPT-2 44 / 44, Whisper
  // 39 / 39, T5 32 / 32, ViT 10 / 10. Graphs without names (the .stripped
  // fixtures) are settled by InferFromStructure's order hints first; without
  // them the neighbourhood alone is right on about half of what it fills
  // (structure_test covers them).
  struct Row {
    const char* dir;
    std::size_t min_filled;
    double min_share;  // of the filled nodes, correct
  };
  for (const Row& row : {Row{"bert-seqcls.torchscript", 10, 0.95},
                         Row{"gpt2-causal-lm.torchscript", 40, 0.95},
                         Row{"whisper-speech-seq2seq.torchscript", 30, 0.95},
                         Row{"t5-seq2seq-lm.torchscript", 30, 0.95},
                         Row{"vit-imgcls.torchscript", 10, 0.95}}) {
    CAPTURE(row.dir);
    const auto f = semmap_test::LoadMapped(row.dir);
    const Graph& g = *f->graph;
    const Manifest& m = *f->manifest;
    std::vector<Mapping> in = semmap_test::RecordsOf(*f->mapper);
    std::size_t forgotten = 0;
    for (Mapping& a : in) {
      if (a.strategy == Strategy::kOpRule || a.strategy == Strategy::kNeighbourhood) {
        a = Mapping();
        ++forgotten;
      }
    }
    const Run run = Infer(g, m, in);
    std::size_t filled = 0, correct = 0;
    for (NodeId i = 0; i < static_cast<NodeId>(g.size()); ++i) {
      if (in[i].mapped() || !run.mappings[i].mapped()) continue;
      auto it = f->truth.find(std::string(g.node(i).id));
      if (it == f->truth.end()) continue;
      ++filled;
      correct += m.path(run.mappings[i].module) == it->second ? 1 : 0;
    }
    CAPTURE(forgotten, filled, correct);
    CHECK(filled >= row.min_filled);
    CHECK(static_cast<double>(correct) >= row.min_share * static_cast<double>(filled));
  }
}

}  // namespace

namespace {

TEST_CASE("Shape computations settle nodes that read a later node's output") {
  // Unsqueeze(Shape(x)) is a shape computation whichever order the nodes
  // are listed in (a graph out of order, or a subgraph reading an outer
  // value defined later).
  for (bool in_order : {true, false}) {
    onnx::ModelProto model = semmap_test::MakeModel();
    onnx::GraphProto* graph = model.mutable_graph();
    if (in_order) semmap_test::AddNode(graph, "/Shape", "Shape", {"x"}, {"s"});
    semmap_test::AddNode(graph, "/Unsqueeze", "Unsqueeze", {"s"}, {"u"});
    semmap_test::AddNode(graph, "/Add", "Add", {"x", "u"}, {"y"});
    if (!in_order) semmap_test::AddNode(graph, "/Shape", "Shape", {"x"}, {"s"});
    const Graph g = Parse(model);
    const OpTraits ops(g, Rules::Default());
    const std::vector<bool> shape = semmap::internal::ShapeComputations(g, ops);
    INFO("in order: " << in_order);
    CHECK(shape[static_cast<std::size_t>(g.find("/Shape"))]);
    CHECK(shape[static_cast<std::size_t>(g.find("/Unsqueeze"))]);
    CHECK_FALSE(shape[static_cast<std::size_t>(g.find("/Add"))]);  // reads real data too
  }
}

TEST_CASE("a cast feeding a graph output converts its producer's result", "[neighbourhood]") {
  // clip.dynamo.onnxslim-fp16: the fp16 converter casts each output back to
  // float; the casts have no consumer, so they follow their producer (the
  // text model's final LayerNorm), not its parent.
  auto f = semmap_test::LoadMapped("torch-2.15/clip.dynamo.onnxslim-fp16");
  const semmap::Mapping& m = f->mapper->moduleFor(f->graph->find("graph_output_cast4"));
  CHECK(m.strategy == semmap::Strategy::kOpRule);
  CHECK(m.module_path == "text_model.final_layer_norm");
  CHECK(f->truth.at("graph_output_cast4") == m.module_path);
}

}  // namespace

namespace {

TEST_CASE("a node computed from initializers alone ignores its position", "[neighbourhood]") {
  // TorchScript opens the graph with the Identity of a de-duplicated
  // initializer; the module "running" at its position (the stem) says
  // nothing about it: it follows its consumer alone.
  const Manifest m = Manifest::FromModulePaths({{"stem", ""}, {"enc.a", ""}});
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::TensorProto* bias = model.mutable_graph()->add_initializer();
  bias->set_name("b");
  bias->set_data_type(onnx::TensorProto::FLOAT);
  bias->add_dims(4);
  for (int k = 0; k < 4; ++k) bias->add_float_data(0.0f);
  using semmap_test::AddNode;
  AddNode(model.mutable_graph(), "id", "Identity", {"b"}, {"v0"});     // 0: hoisted
  AddNode(model.mutable_graph(), "cast", "Cast", {"x"}, {"v1"});       // 1: in place
  AddNode(model.mutable_graph(), "stem", "Relu", {"v1"}, {"v2"});      // 2
  AddNode(model.mutable_graph(), "add", "Add", {"v2", "v0"}, {"v3"});  // 3
  const Graph g = Parse(model);
  std::vector<Mapping> in(g.size());
  in[2] = Answer(m, "stem", 0.8);
  in[3] = Answer(m, "enc.a", 0.8);  // inferred: below the named floor
  OrderHints hints;
  hints.next_module.assign(g.size(), semmap::kNoModule);
  hints.next_module[0] = m.find("stem");
  hints.next_module[1] = m.find("stem");
  semmap_test::ContextParts parts(g, m, std::move(in));
  const std::vector<bool> shape = semmap::internal::ShapeComputations(g, parts.ops);
  semmap::internal::InferFromNeighbourhood(parts.context(), shape, hints, 64);
  CHECK(PathOf(m, parts.records[0]) == "enc.a");  // not the stem's and enc.a's root
  CHECK(parts.records[0].strategy == Strategy::kOpRule);
  // A node of the forward still takes its position into account.
  CHECK(PathOf(m, parts.records[1]) == "stem");
}

TEST_CASE("fresh weights, TorchScript, stripped: the de-duplicated biases' Identities",
          "[neighbourhood]") {
  // Every folded BatchNorm of a fresh ResNet leaves a zero bias; the
  // exporter keeps one initializer per width and reads it through an
  // Identity per Conv, all 16 at the head of the graph.
  const std::unique_ptr<semmap_test::MappedFixture> f =
      semmap_test::LoadMapped("fresh-weights/tv-resnet18.torchscript.stripped");
  std::size_t identities = 0;
  for (NodeId i = 0; i < static_cast<NodeId>(f->graph->size()); ++i) {
    const semmap::Node n = f->graph->node(i);
    if (n.op_type != "Identity") continue;
    ++identities;
    const semmap::Mapping m = f->mapper->moduleFor(i);
    CAPTURE(n.id, m.evidence);
    CHECK(m.module_path == f->truth.at(std::string(n.id)));
  }
  CHECK(identities == 16);
}

}  // namespace

namespace {

TEST_CASE("a shape argument of several modules' nodes is the first one's", "[neighbourhood]") {
  // onnxslim merges equal shape arithmetic: one Concat builds the shape
  // both layers' views read. It is layer 0's copy (the first consumer's
  // module), not the layers' common ancestor; a shape computation that
  // several modules read as data (a mask both layers add) stays with
  // their common ancestor.
  const Manifest m = Manifest::FromModulePaths({{"enc.layer.0", ""}, {"enc.layer.1", ""}});
  onnx::ModelProto model = semmap_test::MakeModel();
  using semmap_test::AddNode;
  AddNode(model.mutable_graph(), "shape", "Shape", {"x"}, {"s"});              // 0
  AddNode(model.mutable_graph(), "concat", "Concat", {"s", "s"}, {"dims"});    // 1
  AddNode(model.mutable_graph(), "view0", "Reshape", {"x", "dims"}, {"y0"});   // 2
  AddNode(model.mutable_graph(), "view1", "Reshape", {"y0", "dims"}, {"y1"});  // 3
  AddNode(model.mutable_graph(), "mask", "Range", {"s", "s", "s"}, {"r"});     // 4
  AddNode(model.mutable_graph(), "add0", "Add", {"y1", "r"}, {"z0"});          // 5
  AddNode(model.mutable_graph(), "add1", "Add", {"z0", "r"}, {"z1"});          // 6
  const Graph g = Parse(model);
  std::vector<Mapping> in(g.size());
  in[2] = Answer(m, "enc.layer.0", 0.8);
  in[3] = Answer(m, "enc.layer.1", 0.8);
  in[5] = Answer(m, "enc.layer.0", 0.8);
  in[6] = Answer(m, "enc.layer.1", 0.8);
  const Run run = Infer(g, m, in);
  CHECK(PathOf(m, run.mappings[1]) == "enc.layer.0");
  CHECK(run.mappings[1].strategy == Strategy::kOpRule);
  CHECK(run.mappings[1].confidence == Approx(conf::kFirstOfMerged * 0.8));
  CHECK(PathOf(m, run.mappings[4]) == "enc.layer");

  // Which inputs are arguments is rule data: a rule file naming no op
  // leaves the Concat with the layers' common ancestor.
  std::ifstream file(std::string(SEMMAP_SOURCE_DIR) + "/rules/default.json");
  REQUIRE(file.good());
  nlohmann::json doc = nlohmann::json::parse(file);
  REQUIRE(doc.contains("shape_operand_ops"));
  doc.erase("shape_operand_ops");
  auto rules = Rules::Parse(doc.dump(), "no-operands.json");
  REQUIRE(rules.ok());
  semmap_test::ContextParts parts(g, m, std::move(in), *rules);
  const std::vector<bool> shape = semmap::internal::ShapeComputations(g, parts.ops);
  semmap::internal::InferFromNeighbourhood(parts.context(), shape, OrderHints{}, 64);
  CHECK(PathOf(m, parts.records[1]) == "enc.layer");
}

// Node `name` of `f` maps to `module`, and the truth says so too.
void CheckMapsTo(const semmap_test::MappedFixture& f, const std::string& name, const std::string& module) {
  const semmap::Mapping& m = f.mapper->moduleFor(f.graph->find(name));
  CAPTURE(name, m.evidence);
  CHECK(m.module_path == module);
  CHECK(f.truth.at(name) == module);
}

TEST_CASE("onnxslim's merged view shapes go to the first layer's attention", "[neighbourhood][fixture]") {
  // BERT with its freshly initialised weights, dynamo, then onnxslim: the
  // two layers' attention views read one Concat per shape.
  auto f = semmap_test::LoadMapped("fresh-weights/bert-seqcls.dynamo.onnxslim");
  for (const char* name : {"node_Concat_97", "node_Concat_151"}) {
    CheckMapsTo(*f, name, "bert.encoder.layer.0.attention.self");
  }
}

}  // namespace

namespace {

// The nodes of `f` whose evidence holds `text`, each checked against the
// truth; how many.
std::size_t CheckAnswered(const semmap_test::MappedFixture& f, absl::string_view text) {
  std::size_t count = 0;
  for (NodeId i = 0; i < static_cast<NodeId>(f.graph->size()); ++i) {
    const semmap::Mapping& m = f.mapper->moduleFor(i);
    if (!absl::StrContains(m.evidence, text)) continue;
    ++count;
    const semmap::Node n = f.graph->node(i);
    CAPTURE(n.id, m.evidence);
    CHECK(m.module_path == f.truth.at(std::string(n.id)));
  }
  return count;
}

TEST_CASE("a value several modules read goes to the first reader when their ancestor cannot compute it",
          "[neighbourhood][fixture]") {
  // T5, fresh weights, TorchScript, names stripped: each RMSNorm casts its
  // input to float, which the residual around it reads too; the layer
  // runs no cast of its own, the norm does. The T5 stack's shape reads
  // go to the stack, whose forward gathers.
  auto t5 = semmap_test::LoadMapped("fresh-weights/t5-seq2seq-lm.torchscript.stripped");
  CHECK(CheckAnswered(*t5, "their common ancestor's none") >= 10);  // 12 measured
  // A quantizer's DynamicQuantizeLinear feeding the three projections
  // is inserted for them all: it stays with the attention, though each
  // projection's `linear` may export as one.
  auto quantized = semmap_test::LoadMapped("torch-2.15/bert-seqcls.dynamo.quantized");
  CHECK(CheckAnswered(*quantized, "their common ancestor's none") == 0);
  const semmap::Mapping& dql = quantized->mapper->moduleFor(quantized->graph->find("layer_norm_QuantizeLinear"));
  CHECK(dql.module_path == "bert.encoder.layer.0.attention.self");
}

}  // namespace

namespace {

TEST_CASE("a quantizer's pair on a graph output quantizes its producer's result", "[neighbourhood][fixture]") {
  // ResNet, fresh weights, dynamo, static QDQ quantization: the logits
  // the classifier's Linear computes are quantized and dequantized again
  // before the graph output. The pair follows the Linear, not its parent.
  auto f = semmap_test::LoadMapped("fresh-weights/resnet-imgcls.dynamo.qdq");
  for (const char* name : {"linear_QuantizeLinear", "linear_DequantizeLinear"}) {
    CheckMapsTo(*f, name, "classifier.1");
  }
}

}  // namespace

namespace {

TEST_CASE("an argument of its consumer's op ignores its position", "[neighbourhood]") {
  // A shape list read only as a Reshape's shape is built by the view's own
  // call: it follows the Reshape's module even where the module running at
  // its position (a re-sorted file) is another. A value the Reshape reads
  // as data still widens to the module at its position.
  const Manifest m = Manifest::FromModulePaths({{"enc.a", ""}, {"enc.b", ""}});
  onnx::ModelProto model = semmap_test::MakeModel();
  using semmap_test::AddNode;
  AddNode(model.mutable_graph(), "shape", "Shape", {"x"}, {"s"});               // 0
  AddNode(model.mutable_graph(), "dims", "Concat", {"s", "s"}, {"d"});         // 1: argument
  AddNode(model.mutable_graph(), "data", "Range", {"s", "s", "s"}, {"r"});     // 2: data
  AddNode(model.mutable_graph(), "other", "Relu", {"x"}, {"o"});               // 3
  AddNode(model.mutable_graph(), "view", "Reshape", {"r", "d"}, {"y"});        // 4
  const Graph g = Parse(model);
  std::vector<Mapping> in(g.size());
  in[3] = Answer(m, "enc.b", 0.8);
  in[4] = Answer(m, "enc.a", 0.8);  // inferred: below the named floor
  OrderHints hints;
  hints.next_module.assign(g.size(), m.find("enc.b"));
  semmap_test::ContextParts parts(g, m, std::move(in));
  const std::vector<bool> shape = semmap::internal::ShapeComputations(g, parts.ops);
  semmap::internal::InferFromNeighbourhood(parts.context(), shape, hints, 64);
  CHECK(PathOf(m, parts.records[1]) == "enc.a");
  CHECK(PathOf(m, parts.records[2]) == "enc");
}

}  // namespace

namespace {

TEST_CASE("a dequantization of an op's quantized result belongs with that op", "[neighbourhood][fixture]") {
  // BERT, dynamic quantization: each embedding table is stored quantized,
  // and the lookup's result is dequantized before the embeddings add
  // them: the DequantizeLinear completes the lookup. A DequantizeLinear
  // of a weight, or of a QuantizeLinear (a static QDQ pair), still
  // follows its consumers.
  auto f = semmap_test::LoadMapped("torch-2.15/bert-seqcls.dynamo.quantized");
  const std::vector<std::pair<std::string, std::string>> lookups = {
      {"embedding_DequantizeLinear", "bert.embeddings.word_embeddings"},
      {"embedding_1_DequantizeLinear", "bert.embeddings.token_type_embeddings"},
      {"embedding_2_DequantizeLinear", "bert.embeddings.position_embeddings"}};
  for (const auto& [name, module] : lookups) CheckMapsTo(*f, name, module);
  auto qdq = semmap_test::LoadMapped("fresh-weights/resnet-imgcls.dynamo.qdq");
  std::size_t dequantized = 0;
  for (NodeId i = 0; i < static_cast<NodeId>(qdq->graph->size()); ++i) {
    const semmap::Node n = qdq->graph->node(i);
    if (n.op_type != "DequantizeLinear") continue;
    ++dequantized;
    CAPTURE(n.id);
    CHECK(qdq->mapper->moduleFor(i).module_path == qdq->truth.at(std::string(n.id)));
  }
  CHECK(dequantized == 20);
}

}  // namespace
