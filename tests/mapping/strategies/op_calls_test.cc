// Nodes named after the op call they compute (the dynamo exporter's
// node_<FX name>), placed with the forward signatures, on real processed
// exports whose metadata a tool removed.
#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "manifest/rule_queries.h"
#include "mapped_fixture.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace semmap_test {
namespace {

constexpr const char* kBertSlim = "torch-2.15/bert-seqcls.dynamo.onnxslim";

bool PlacedByName(const semmap::Mapping& m) {
  return m.strategy == semmap::Strategy::kStructure &&
         std::string(m.evidence).find("the node's name numbers it") != std::string::npos;
}

// The fixture's manifest as JSON, for editing.
nlohmann::json ManifestDoc(const std::string& dir) {
  std::ifstream in(Fixture(dir, "manifest.json"));
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// Whether `node` is placed by its name when the fixture's graph is mapped
// with the manifest `doc` (answered while the mapper lives: a Mapping views
// its mapper).
bool PlacedByNameWith(const MappedFixture& f, const nlohmann::json& doc, const char* node) {
  auto manifest = semmap::Manifest::Parse(doc.dump(), "edited.json");
  REQUIRE(manifest.ok());
  auto mapper = semmap::SemanticMapper::Create(
      *f.graph, std::make_shared<const semmap::Manifest>(*std::move(manifest)));
  REQUIRE(mapper.ok());
  return PlacedByName(mapper->moduleFor(f.graph->find(node)));
}

TEST_CASE("op call names read the op and the call's number", "[op_calls][rules]") {
  const semmap::internal::RuleQueries rules(semmap::Rules::Default());
  absl::string_view op;
  std::uint64_t call = 99;
  CHECK(rules.OpCallName("node_linear_4", &op, &call));
  CHECK(op == "linear");
  CHECK(call == 4);
  CHECK(rules.OpCallName("node_linear", &op, &call));
  CHECK(op == "linear");
  CHECK(call == 0);
  CHECK(rules.OpCallName("node_sym_size_int_3", &op, &call));
  CHECK(op == "sym_size_int");
  CHECK(call == 3);
  CHECK(rules.OpCallName("node__to_copy_1", &op, &call));
  CHECK(op == "_to_copy");
  // quantize_dynamic names the MatMulInteger replacing a node <node>_quant.
  CHECK(rules.OpCallName("node_linear_12_quant", &op, &call));
  CHECK(op == "linear");
  CHECK(call == 12);
  // ONNX Runtime names a fusion after the first node it replaced.
  CHECK(rules.OpCallName("node_linear_32/MatMulScaleFusion/", &op, &call));
  CHECK(op == "linear");
  CHECK(call == 32);
  CHECK(rules.OpCallName("node_matmul/MatmulTransposeFusion//MatMulScaleFusion/", &op, &call));
  CHECK(op == "matmul");
  CHECK(call == 0);
  // Nodes the exporter created inside an op's lowering carry a creation
  // counter, not a call: never read as one.
  CHECK_FALSE(rules.OpCallName("node_MatMul_55", &op, &call));
  CHECK_FALSE(rules.OpCallName("/encoder/layer.0/MatMul", &op, &call));
  CHECK(rules.OpCallAlias("to") == "_to_copy");
  CHECK(rules.OpCallAlias("float") == "_to_copy");
  CHECK(rules.OpCallAlias("linear") == "linear");
}

TEST_CASE("a rule file's op_call_names need two capturing groups", "[op_calls][rules]") {
  auto bad = semmap::Rules::Parse(
      R"({"format": "semmap.rules", "version": 1, "op_call_names": [{"pattern": "^node_([a-z]+)$"}]})",
      "r.json");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()),
             Catch::Contains("r.json") && Catch::Contains("/op_call_names/0"));
  auto alias = semmap::Rules::Parse(
      R"({"format": "semmap.rules", "version": 1, "op_call_aliases": [{"torch": "^to$"}]})",
      "r.json");
  REQUIRE_FALSE(alias.ok());
  CHECK_THAT(std::string(alias.status().message()), Catch::Contains("/op_call_aliases/0"));
}

TEST_CASE("a node named after its op call runs in the module whose forward made that call",
          "[op_calls]") {
  // onnxslim removed every node's metadata. BertModel.forward builds the
  // attention mask after its embeddings ran: node_ge and node_bitwise_and are
  // the model's first ge and bitwise_and calls, both in bert's own forward.
  auto f = LoadMapped(kBertSlim);
  for (const char* node : {"node_ge", "node_bitwise_and", "node_bitwise_and_1"}) {
    CAPTURE(node);
    const semmap::Mapping& m = f->mapper->moduleFor(f->graph->find(node));
    CHECK(PlacedByName(m));
    CHECK(m.module_path == "bert");
    CHECK(f->truth.at(node) == "bert");
  }
}

TEST_CASE("an op the signatures count otherwise than the names is not placed by them",
          "[op_calls]") {
  // Without the ge call in bert's recorded forward, the graph numbers one
  // call more than the signatures hold: the names of ge say nothing.
  auto f = LoadMapped(kBertSlim);
  nlohmann::json doc = ManifestDoc(kBertSlim);
  bool removed = false;
  for (auto& module : doc.at("modules")) {
    if (module.at("path") != "bert") continue;
    auto& events = module.at("forward");
    for (auto it = events.begin(); it != events.end(); ++it) {
      if (it->contains("op") && it->at("op") == "ge") {
        events.erase(it);
        removed = true;
        break;
      }
    }
  }
  REQUIRE(removed);
  CHECK_FALSE(PlacedByNameWith(*f, doc, "node_ge"));
  // The other ops' names still place their nodes.
  CHECK(PlacedByNameWith(*f, doc, "node_bitwise_and"));
}

TEST_CASE("placements that run against the data flow are dropped", "[op_calls]") {
  // tv-convnext.dynamo.onnxslim: the export called permute once more than
  // the signatures record (node_permute_4, gone from the file) and onnxslim
  // removed the last one, so the counts agree while every call from the
  // fifth on is one off: node_permute_6 would sit at features.3.0's permute,
  // after the LayerNorm it feeds. The permute names are dropped.
  auto f = LoadMapped("torch-2.15/tv-convnext.dynamo.onnxslim");
  for (const char* node : {"node_permute_6", "node_permute_7", "node_permute_8"}) {
    CAPTURE(node);
    const semmap::Mapping& m = f->mapper->moduleFor(f->graph->find(node));
    CHECK_FALSE(PlacedByName(m));
    CHECK(m.module_path == f->truth.at(node));
  }
}

TEST_CASE("op call places on processed dynamo exports are right", "[op_calls]") {
  // Every node placed by its name is right, on files of all three sources.
  for (const char* dir : {"torch-2.15/t5-seq2seq-lm.dynamo.onnxslim",
                          "torch-2.15/llama-causal-lm.dynamo.ort-session",
                          "torch-2.15/tv-vit.dynamo.onnxslim",
                          "torch-2.15/timm-convnext.dynamo.ort-session"}) {
    CAPTURE(dir);
    auto f = LoadMapped(dir);
    std::size_t placed = 0, right = 0;
    for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(f->graph->size()); ++i) {
      const semmap::Mapping& m = f->mapper->moduleFor(i);
      const auto truth = f->truth.find(std::string(f->graph->node(i).name));
      if (!PlacedByName(m) || truth == f->truth.end()) continue;
      ++placed;
      right += m.module_path == truth->second;
    }
    CAPTURE(placed);
    CHECK(placed >= 5);
    CHECK(right == placed);
  }
}

TEST_CASE("a quantizer's matmul keeps the op call of the node it replaced", "[op_calls]") {
  // t5-seq2seq-lm.dynamo.quantized: T5's Linears have no bias, so each is
  // one MatMul named after its linear call, which quantize_dynamic replaced
  // by node_linear_<k>_quant. The decoder's self-attention and
  // cross-attention projections have one shape; their calls tell them apart.
  auto f = LoadMapped("torch-2.15/t5-seq2seq-lm.dynamo.quantized");
  for (const char* node : {"node_linear_12_quant", "node_linear_13_quant", "node_linear_15_quant"}) {
    CAPTURE(node);
    const semmap::Mapping& m = f->mapper->moduleFor(f->graph->find(node));
    CHECK(PlacedByName(m));
    CHECK(m.module_path == f->truth.at(node));
  }
  CHECK(f->truth.at("node_linear_12_quant") == "decoder.block.0.layer.0.SelfAttention.q");
}

TEST_CASE("a node goes to the one module whose calls in its window may export it", "[op_calls]") {
  // bert-seqcls.dynamo.onnxslim: the attention's softmax and the mask
  // arithmetic around it come after the projections' calls and before the
  // attention's output; of the calls between, only the self-attention's
  // scaled_dot_product_attention may export as Softmax or Where (the Add
  // between them then reads only the attention's results).
  auto f = LoadMapped(kBertSlim);
  for (const char* node : {"node_Softmax_138", "node_Where_135"}) {
    CAPTURE(node);
    const semmap::Mapping& m = f->mapper->moduleFor(f->graph->find(node));
    CHECK_THAT(std::string(m.evidence), Catch::Contains("is the only one to run an op exported as"));
    CHECK(m.module_path == "bert.encoder.layer.0.attention.self");
    CHECK(f->truth.at(node) == m.module_path);
  }
  CHECK(f->mapper->moduleFor(f->graph->find("node_Add_137")).module_path ==
        "bert.encoder.layer.0.attention.self");
}

TEST_CASE("shape computations and a tool's nodes are not placed by windows", "[op_calls]") {
  // clip.dynamo.ort-session: node_Concat_161 builds a view's shape in the
  // text model; the only `cat` before its reader is the vision embeddings'
  // class token, which does not export it.
  auto f = LoadMapped("torch-2.15/clip.dynamo.ort-session");
  const semmap::Mapping& shape = f->mapper->moduleFor(f->graph->find("node_Concat_161"));
  CHECK_THAT(std::string(shape.evidence), !Catch::Contains("is the only one to run"));
  CHECK(shape.module_path != "vision_model.embeddings");
  // t5-seq2seq-lm.dynamo.quantized: the scale Mul quantize_dynamic put after
  // a projection is not the next layer norm's mul.
  auto q = LoadMapped("torch-2.15/t5-seq2seq-lm.dynamo.quantized");
  const semmap::Mapping& scale =
      q->mapper->moduleFor(q->graph->find("node_linear_3_quant_output_scale_mul"));
  CHECK(scale.module_path == q->truth.at("node_linear_3_quant_output_scale_mul"));
}

TEST_CASE("a fusion of a Linear's bias with the activation after it is both modules' work",
          "[op_calls]") {
  // timm-convnext.dynamo.ort-session: ONNX Runtime fused fc1's bias add and
  // the act module's GELU into FastGelu, which reads fc1.bias. A linear
  // cannot be exported as FastGelu; the act's gelu, in the node's window,
  // can: the node is the MLP's, with both as origins.
  auto f = LoadMapped("torch-2.15/timm-convnext.dynamo.ort-session");
  const semmap::NodeId node = f->graph->find("FastGelu");
  const semmap::Mapping& m = f->mapper->moduleFor(node);
  CHECK(m.module_path == "stages.0.blocks.0.mlp");
  CHECK(f->truth.at("FastGelu") == m.module_path);
  const std::vector<absl::string_view> origins = f->mapper->originPathsOf(node);
  CHECK(origins == std::vector<absl::string_view>{"stages.0.blocks.0.mlp.fc1", "stages.0.blocks.0.mlp.act"});
}

TEST_CASE("unnamed weights of one shape are told apart by the reads in their window",
          "[op_calls]") {
  // timm-vit2.dynamo.ort-session: ONNX Runtime folded the transposed
  // weights into new initializers (val_112, val_114); both MatMuls read the
  // same norm's output and their weights have one shape. The window between
  // that norm and the next placed node holds fc1's and fc2's reads, paired
  // in the order of the nodes' creation counters.
  auto f = LoadMapped("torch-2.15/timm-vit2.dynamo.ort-session");
  for (const char* node : {"node_MatMul_109", "node_MatMul_111"}) {
    CAPTURE(node);
    const semmap::Mapping& m = f->mapper->moduleFor(f->graph->find(node));
    CHECK_THAT(std::string(m.evidence), Catch::Contains("has the shape of a parameter"));
    CHECK(m.module_path == f->truth.at(node));
  }
}

TEST_CASE("without names, the parameter reads alone give windows", "[op_calls]") {
  // llama-causal-lm.torchscript.stripped: nodes and values renamed, no
  // metadata; the parameters keep their names. The RMSNorm's arithmetic
  // before its weight's Mul runs between the previous read and that one,
  // where only input_layernorm's forward runs pow, mean and rsqrt.
  auto f = LoadMapped("torch-2.15/llama-causal-lm.torchscript.stripped");
  for (const char* node : {"n93", "n94", "n97"}) {
    CAPTURE(node);
    const semmap::Mapping& m = f->mapper->moduleFor(f->graph->find(node));
    CHECK_THAT(std::string(m.evidence), Catch::Contains("is the only one to run an op exported as"));
    CHECK(m.module_path == "model.layers.0.input_layernorm");
    CHECK(f->truth.at(node) == m.module_path);
  }
}

TEST_CASE("signatures that expand past the bound place nothing, in bounded time",
          "[op_calls][robustness]") {
  // The root calls b 1,000 times and b calls a 1,000 times: a million calls
  // of a's relu, far past the bound for a 2-node graph and 2,000 events.
  // Expanded in full, they would place both nodes (the first and the last
  // relu call) in a.
  nlohmann::json doc = nlohmann::json::parse(ManifestJson({"a", "b"}));
  doc["schema_version"] = 2;
  nlohmann::json calls_a = nlohmann::json::array(), calls_b = nlohmann::json::array();
  for (int k = 0; k < 1000; ++k) {
    calls_a.push_back({{"call", "a"}});
    calls_b.push_back({{"call", "b"}});
  }
  for (auto& module : doc.at("modules")) {
    const std::string path = module.at("path");
    if (path.empty()) module["forward"] = calls_b;
    if (path == "b") module["forward"] = calls_a;
    if (path == "a") module["forward"] = nlohmann::json::array({{{"op", "relu"}}});
  }
  auto manifest = semmap::Manifest::Parse(doc.dump(), "m.json");
  REQUIRE(manifest.ok());
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("x");
  AddNode(graph, "node_relu", "Relu", {"x"}, {"y"});
  AddNode(graph, "node_relu_999999", "Relu", {"y"}, {"z"});
  graph->add_output()->set_name("z");
  auto g = semmap::Graph::Parse(Serialize(model), "h.onnx");
  REQUIRE(g.ok());
  semmap::MapperOptions options;
  options.allow_manifest_mismatch = true;
  auto mapper = semmap::SemanticMapper::Create(*g, &*manifest, options);
  REQUIRE(mapper.ok());
  CHECK_FALSE(PlacedByName(mapper->moduleFor(0)));
  CHECK_FALSE(PlacedByName(mapper->moduleFor(1)));
}

// The nodes of `f` reading any of `tensors`, each paired with its read
// (structure step 0's shared reads) and right; returns how many.
std::size_t CheckPairedReaders(const MappedFixture& f,
                               std::initializer_list<absl::string_view> tensors) {
  std::size_t readers = 0;
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(f.graph->size()); ++i) {
    const semmap::Node n = f.graph->node(i);
    const bool reads = std::any_of(n.inputs.begin(), n.inputs.end(), [&](absl::string_view in) {
      return std::find(tensors.begin(), tensors.end(), in) != tensors.end();
    });
    if (!reads) continue;
    ++readers;
    const semmap::Mapping& m = f.mapper->moduleFor(i);
    CAPTURE(n.id, m.evidence);
    CHECK_THAT(std::string(m.evidence), Catch::Contains("nodes share"));
    CHECK(m.module_path == f.truth.at(std::string(n.id)));
  }
  return readers;
}

TEST_CASE("the readers of a de-duplicated tensor make its parameters' reads in order",
          "[op_calls][fixture]") {
  // Phi-3 with its freshly initialised weights, dynamo, names stripped:
  // the five RMSNorms' weights (ones) are one initializer named after
  // layer 0's input norm. In the graph's order its five readers make the
  // five reads the signatures record of [16] parameters no other
  // initializer is named after.
  auto f = LoadMapped("fresh-weights/phi3-causal-lm.dynamo.stripped");
  CHECK(CheckPairedReaders(*f, {"model.layers.0.input_layernorm.weight"}) == 5);
}

TEST_CASE("a graph of anonymous weights still pairs a shared tensor's readers", "[op_calls][fixture]") {
  // T5 with its freshly initialised weights, dynamo, names stripped: four
  // of the manifest's 50 parameters name an initializer (too few for the
  // parameter reads to place nodes), one of them the twelve RMSNorm
  // weights de-duplicated into one. Its twelve readers still make the
  // twelve reads in order.
  auto f = LoadMapped("fresh-weights/t5-seq2seq-lm.dynamo.stripped");
  CHECK(CheckPairedReaders(*f, {"encoder.block.0.layer.0.layer_norm.weight"}) == 12);
}

TEST_CASE("TorchScript's anonymous copies of a de-duplicated tensor pair like a shared one",
          "[op_calls][fixture]") {
  // T5, fresh weights, TorchScript, names stripped: each RMSNorm weight
  // but the first is an Identity of the one kept, its output renamed. The
  // readers of those pair with the reads of the [16] parameters no
  // initializer is named after: the eleven other norms. And the two
  // lookups of `shared.weight` (a module that never ran) pair with the
  // encoder's and the decoder's embeddings, tied to it; the head's matmul
  // reads that shape too, but no Gather is a `linear`: its read is not
  // counted.
  auto f = LoadMapped("fresh-weights/t5-seq2seq-lm.torchscript.stripped");
  CHECK(CheckPairedReaders(*f, {"shared.weight"}) == 2);
  std::size_t paired = 0, right = 0;
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(f->graph->size()); ++i) {
    const semmap::Mapping& m = f->mapper->moduleFor(i);
    if (!absl::StrContains(m.evidence, "nodes share")) continue;
    ++paired;
    right += m.module_path == f->truth.at(std::string(f->graph->node(i).id));
  }
  CHECK(paired == 13);
  CHECK(right == paired);
}

TEST_CASE("a call whose named read no shared reader makes is left out of the pairing",
          "[op_calls][fixture]") {
  // BERT, fresh weights, dynamo, names stripped: the norms' weights and
  // biases and the [16] Linear biases are two shared tensors, read by 15
  // nodes. The pooler's Linear reads its weight (named) and a zero bias of
  // that shape, which the exporter's optimizer dropped from its Gemm: its
  // call is no read to pair, and the 15 readers make the other 15.
  auto f = LoadMapped("fresh-weights/bert-seqcls.dynamo.stripped");
  CHECK(CheckPairedReaders(*f, {"bert.embeddings.LayerNorm.weight",
                               "bert.embeddings.LayerNorm.bias"}) == 15);
}

TEST_CASE("a shared tensor's reader fusing its read with the next call's op does both modules' work",
          "[op_calls][fixture]") {
  // timm's ViT, fresh weights, dynamo, then an ONNX Runtime session: each
  // MLP's fc1 bias (zeros, one tensor for all six blocks) is read by a
  // BiasGelu, which no `linear` exports; the activation's `gelu`, the
  // next call, does. Each BiasGelu makes its block's fc1 read and fuses
  // it with that gelu: the MLP, with both as origins.
  auto f = LoadMapped("fresh-weights/timm-vit.dynamo.ort-session");
  std::size_t fused = 0;
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(f->graph->size()); ++i) {
    const semmap::Node n = f->graph->node(i);
    if (n.op_type != "BiasGelu") continue;
    const semmap::Mapping& m = f->mapper->moduleFor(i);
    CAPTURE(n.id, m.evidence);
    CHECK_THAT(std::string(m.evidence), Catch::Contains("fused with"));
    CHECK(m.module_path == f->truth.at(std::string(n.id)));
    const std::vector<absl::string_view> origins = f->mapper->originPathsOf(i);
    REQUIRE(origins.size() == 2);
    CHECK(absl::EndsWith(origins[0], ".mlp.fc1"));
    CHECK(absl::EndsWith(origins[1], ".mlp.act"));
    ++fused;
  }
  CHECK(fused == 6);
}

TEST_CASE("an op whose last calls no node names still places the others", "[op_calls][fixture]") {
  // timm's ViT, fresh weights, dynamo, then an ONNX Runtime session: the
  // head's Gemm was rebuilt without its dropped zero bias (node_Gemm_*)
  // and the last block's fc2 fused, so the linear calls' names stop at 21
  // of 25 recorded. The bias Adds named after their calls read one shared
  // zero tensor: their names place them, below the confident floor.
  auto f = LoadMapped("fresh-weights/timm-vit.dynamo.ort-session");
  std::size_t placed = 0;
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(f->graph->size()); ++i) {
    const semmap::Node n = f->graph->node(i);
    if (n.op_type != "Add" || !absl::StartsWith(n.name, "node_linear")) continue;
    ++placed;
    const semmap::Mapping& m = f->mapper->moduleFor(i);
    CAPTURE(n.name, m.evidence);
    CHECK_THAT(std::string(m.evidence), Catch::Contains("the last calls named by no node"));
    CHECK(m.confidence < semmap::kConfidentFloor);
    CHECK(m.module_path == f->truth.at(std::string(n.id)));
  }
  CHECK(placed == 17);
}

}  // namespace
}  // namespace semmap_test
