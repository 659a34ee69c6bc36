#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "test_util.h"

using semmap::Graph;
using semmap::kNoNode;
using semmap_test::AddNode;
using semmap_test::Fixture;
using semmap_test::MakeModel;
using semmap_test::Serialize;

namespace {

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("A real TorchScript export loads with indexes", "[graph]") {
  auto g = Graph::Load(Fixture("bert-seqcls.torchscript", "model.onnx"));
  REQUIRE(g.ok());
  CHECK(g->size() > 100);
  CHECK(g->producerName() == "pytorch");
  CHECK(g->opset() == 17);
  const semmap::NodeId q = g->find("/bert/encoder/layer.0/attention/self/query/MatMul");
  REQUIRE(q != kNoNode);
  const semmap::Node& n = g->node(q);
  CHECK(n.op_type == "MatMul");
  CHECK(n.id == n.name);
  REQUIRE(n.outputs.size() == 1);
  CHECK(g->producer(n.outputs[0]) == q);
  REQUIRE_FALSE(g->consumers(n.outputs[0]).empty());
  for (semmap::NodeId c : g->consumers(n.outputs[0])) {
    const auto& inputs = g->node(c).inputs;
    CHECK(std::find(inputs.begin(), inputs.end(), n.outputs[0]) != inputs.end());
  }
  // Initializers: names and shapes, not payloads.
  const semmap::TensorInfo* emb = g->initializer("bert.embeddings.word_embeddings.weight");
  REQUIRE(emb != nullptr);
  CHECK(emb->dims.size() == 2);
  CHECK(emb->elem_type == 1);
  CHECK(g->initializer("bert.encoder.layer.0.attention.self.query.bias") != nullptr);
  CHECK_FALSE(g->inputs().empty());
  CHECK_FALSE(g->outputs().empty());
  CHECK(g->producer(g->inputs()[0]) == kNoNode);
}

TEST_CASE("Freshly initialised weights: torch shares identical tensors via Identity",
          "[graph]") {
  // All-zero biases of a fresh model are de-duplicated by the exporter: the
  // query bias is an Identity of another module's bias.
  auto g = Graph::Load(Fixture("bert-seqcls-fresh-init.torchscript", "model.onnx"));
  REQUIRE(g.ok());
  CHECK(g->initializer("bert.encoder.layer.0.attention.self.query.bias") == nullptr);
  const semmap::NodeId identity = g->producer("bert.encoder.layer.0.attention.self.query.bias");
  REQUIRE(identity != kNoNode);
  CHECK(g->node(identity).op_type == "Identity");
  REQUIRE(g->node(identity).inputs.size() == 1);
  CHECK(g->initializer(g->node(identity).inputs[0]) != nullptr);
}

TEST_CASE("A real dynamo export exposes node metadata_props", "[graph]") {
  auto g = Graph::Load(Fixture("bert-seqcls.dynamo", "model.onnx"));
  REQUIRE(g.ok());
  std::size_t with_scopes = 0;
  for (const semmap::Node& n : g->nodes()) {
    for (const auto& kv : n.metadata) with_scopes += kv.first == "pkg.torch.onnx.name_scopes";
  }
  CHECK(with_scopes > g->size() / 2);
}

TEST_CASE("Node ids are unique; duplicates and empty names get #index", "[graph]") {
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("x");
  AddNode(graph, "a", "Relu", {"x"}, {"y"});
  AddNode(graph, "dup", "Relu", {"y"}, {"z"});
  AddNode(graph, "dup", "Relu", {"z"}, {"w"});
  AddNode(graph, "", "Relu", {"w"}, {"v"});
  auto g = Graph::Parse(Serialize(model), "mem.onnx");
  REQUIRE(g.ok());
  CHECK(g->node(0).id == "a");
  CHECK(g->node(1).id == "dup#1");
  CHECK(g->node(2).id == "dup#2");
  CHECK(g->node(3).id == "#3");
  CHECK(g->find("dup") == kNoNode);
  CHECK(g->find("dup#2") == 2);
  CHECK(g->find("a") == 0);
}

TEST_CASE("A generated id never takes another node's name", "[graph]") {
  // "dup" twice at indexes 0 and 2 would give "dup#2", the name of node 1.
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  AddNode(graph, "dup", "Relu", {"x"}, {"y"});
  AddNode(graph, "dup#2", "Relu", {"y"}, {"z"});
  AddNode(graph, "dup", "Relu", {"z"}, {"w"});
  AddNode(graph, "dup#2#", "Relu", {"w"}, {"v"});
  for (semmap::Loader loader : {semmap::Loader::kWireScan, semmap::Loader::kProtobuf}) {
    semmap::GraphOptions options;
    options.loader = loader;
    auto g = Graph::Parse(Serialize(model), "ids.onnx", options);
    REQUIRE(g.ok());
    CHECK(g->node(0).id == "dup#0");
    CHECK(g->node(1).id == "dup#2");
    CHECK(g->node(2).id == "dup#2##");
    CHECK(g->node(3).id == "dup#2#");
    for (semmap::NodeId i = 0; i < 4; ++i) CHECK(g->find(g->node(i).id) == i);
  }
}

TEST_CASE("A generated id may be a repeated name; that name's nodes still get ids", "[graph]") {
  // Node 0 has no name and takes "#0"; nodes 1 and 2 are both named "#0",
  // a name that left the index because it repeats. Taking "#0" for node 0
  // must not make nodes 1 and 2 look uniquely named.
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  AddNode(graph, "", "Relu", {"x"}, {"y"});
  AddNode(graph, "#0", "Relu", {"y"}, {"z"});
  AddNode(graph, "#0", "Relu", {"z"}, {"w"});
  for (semmap::Loader loader : {semmap::Loader::kWireScan, semmap::Loader::kProtobuf}) {
    semmap::GraphOptions options;
    options.loader = loader;
    auto g = Graph::Parse(Serialize(model), "ids.onnx", options);
    REQUIRE(g.ok());
    CHECK(g->node(0).id == "#0");
    CHECK(g->node(1).id == "#0#1");
    CHECK(g->node(2).id == "#0#2");
    for (semmap::NodeId i = 0; i < 3; ++i) CHECK(g->find(g->node(i).id) == i);
  }
}

TEST_CASE("nodes() is a random-access range of the same Nodes as node()", "[graph]") {
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  AddNode(graph, "a", "Relu", {"x"}, {"y"});
  AddNode(graph, "b", "MatMul", {"y", "w"}, {"z"});
  AddNode(graph, "c", "Relu", {"z"}, {"out"});
  auto g = Graph::Parse(Serialize(model), "range.onnx");
  REQUIRE(g.ok());
  const semmap::NodeList nodes = g->nodes();
  REQUIRE(nodes.size() == 3);
  CHECK_FALSE(nodes.empty());
  CHECK(semmap::NodeList().empty());
  CHECK(nodes.end() - nodes.begin() == 3);
  CHECK(std::distance(nodes.begin(), nodes.end()) == 3);
  std::vector<std::string> ids;
  for (const semmap::Node& n : nodes) ids.emplace_back(n.id);
  CHECK(ids == std::vector<std::string>{"a", "b", "c"});
  for (semmap::NodeId i = 0; i < 3; ++i) {
    CHECK(nodes[static_cast<std::size_t>(i)] == g->node(i));
    CHECK(nodes.begin()[i] == g->node(i));
  }
  auto it = nodes.begin();
  CHECK(it->op_type == "Relu");
  it += 2;
  CHECK((*it).id == "c");
  CHECK((--it)->id == "b");
  CHECK(it < nodes.end());
  CHECK(nodes.begin() + 3 == nodes.end());
  CHECK(std::count_if(nodes.begin(), nodes.end(),
                      [](const semmap::Node& n) { return n.op_type == "Relu"; }) == 2);
  const auto matmul = std::find_if(nodes.begin(), nodes.end(),
                                   [](const semmap::Node& n) { return n.op_type == "MatMul"; });
  CHECK(matmul - nodes.begin() == 1);
  // A NodeList, its iterators and its Nodes outlive the Graph object while a
  // copy of the Graph lives.
  semmap::NodeList::const_iterator last;
  {
    Graph copy = *g;
    last = copy.nodes().end() - 1;
    g = absl::InvalidArgumentError("gone");
    CHECK((*last).id == "c");
  }
}

TEST_CASE("Node fields survive compact storage with both loaders", "[graph]") {
  // Distinct op types and domains (a hostile file may give every node its
  // own), doc strings on some nodes only, metadata, attributes, an omitted
  // optional input.
  constexpr int kNodes = 300;
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  for (int i = 0; i < kNodes; ++i) {
    const std::string k = std::to_string(i);
    onnx::NodeProto* n =
        AddNode(graph, "n" + k, "Op" + k, {i % 3 == 0 ? "" : "v" + k}, {"o" + k});
    if (i % 2 == 0) n->set_domain(i % 4 == 0 ? "" : "dom" + k);
    if (i % 5 == 0) n->set_doc_string("doc " + k);
    if (i % 7 == 0) semmap_test::AddNodeMetadata(n, "k" + k, "v" + k);
    if (i % 11 == 0) {
      n->add_attribute()->set_name("alpha");
      n->add_attribute()->set_name("beta" + k);
    }
  }
  const std::string bytes = Serialize(model);
  for (const auto loader : {semmap::Loader::kWireScan, semmap::Loader::kProtobuf}) {
    semmap::GraphOptions options;
    options.loader = loader;
    auto g = Graph::Parse(bytes, "fields.onnx", options);
    REQUIRE(g.ok());
    REQUIRE(g->size() == static_cast<std::size_t>(kNodes));
    std::size_t bad = 0;
    for (int i = 0; i < kNodes; ++i) {
      const std::string k = std::to_string(i);
      const semmap::Node n = g->node(i);
      const std::string domain = i % 2 == 0 && i % 4 != 0 ? "dom" + k : "";
      const std::string doc = i % 5 == 0 ? "doc " + k : "";
      std::vector<semmap::MetadataEntry> metadata;
      const std::string key = "k" + k, value = "v" + k;
      if (i % 7 == 0) metadata.emplace_back(key, value);
      std::vector<absl::string_view> attributes;
      const std::string beta = "beta" + k;
      if (i % 11 == 0) attributes = {"alpha", beta};
      const std::string input = i % 3 == 0 ? "" : "v" + k;
      if (n.id != "n" + k || n.name != "n" + k || n.op_type != "Op" + k || n.domain != domain ||
          n.doc_string != doc || n.subgraph != 0 || n.inputs.size() != 1 ||
          n.inputs[0] != input || n.input_values.size() != 1 ||
          n.input_values[0] != semmap::kNoValue || n.outputs.size() != 1 ||
          n.outputs[0] != "o" + k || g->producer(n.output_values[0]) != i ||
          n.metadata != absl::MakeConstSpan(metadata) ||
          n.attribute_names != absl::MakeConstSpan(attributes)) {
        ++bad;
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("Subgraph nodes are traversed after their owner, with outer-scope uses", "[graph]") {
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("cond");
  graph->add_input()->set_name("x");
  AddNode(graph, "/pre/Relu", "Relu", {"x"}, {"h"});
  onnx::NodeProto* if_node = AddNode(graph, "/If", "If", {"cond"}, {"out"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* attr = if_node->add_attribute();
    attr->set_name(branch);
    attr->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = attr->mutable_g();
    body->set_name(branch);
    AddNode(body, "/inner/Neg", "Neg", {"h"}, {"t"});  // same name in both branches
    AddNode(body, "/inner/Abs", "Abs", {"t"}, {"b_out"});
  }
  AddNode(graph, "/post/Relu", "Relu", {"out"}, {"y"});
  auto g = Graph::Parse(Serialize(model), "if.onnx");
  REQUIRE(g.ok());
  REQUIRE(g->size() == 7);
  CHECK(g->node(2).id == "/inner/Neg#2");
  CHECK(g->node(4).id == "/inner/Neg#4");
  CHECK(g->node(6).name == "/post/Relu");
  REQUIRE(g->subgraphs().size() == 3);
  CHECK(g->subgraphs()[1].owner == 1);
  CHECK(g->subgraphs()[1].attribute == "then_branch");
  CHECK(g->node(2).subgraph == 1);
  CHECK(g->node(4).subgraph == 2);
  // "t" is branch-local: each branch sees its own producer.
  CHECK(g->producer("t", 1) == 2);
  CHECK(g->producer("t", 2) == 4);
  CHECK(g->producer("t", 0) == kNoNode);
  // "h" is used inside both branches: the inner nodes and the If consume it.
  auto consumers = g->consumers("h");
  CHECK(std::find(consumers.begin(), consumers.end(), 1) != consumers.end());
  CHECK(std::find(consumers.begin(), consumers.end(), 2) != consumers.end());
  CHECK(std::find(consumers.begin(), consumers.end(), 4) != consumers.end());
}

TEST_CASE("Bad ONNX input gives statuses naming the file and the cause", "[graph]") {
  const std::string real = ReadBytes(Fixture("bert-seqcls.torchscript", "model.onnx"));
  REQUIRE(real.size() > 1000);
  SECTION("missing file") {
    auto g = Graph::Load("/nonexistent/model.onnx");
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == absl::StatusCode::kNotFound);
    CHECK(std::string(g.status().message()).find("/nonexistent/model.onnx") != std::string::npos);
  }
  SECTION("empty") {
    auto g = Graph::Parse("", "empty.onnx");
    REQUIRE_FALSE(g.ok());
    CHECK(std::string(g.status().message()) == "empty.onnx: empty file, expected an ONNX model");
  }
  SECTION("random bytes") {
    std::string bytes;
    std::uint32_t state = 12345;
    for (int i = 0; i < 4096; ++i) {
      state = state * 1664525u + 1013904223u;
      bytes.push_back(static_cast<char>(state >> 24));
    }
    auto g = Graph::Parse(bytes, "random.onnx");
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(g.status().message()).rfind("random.onnx: ", 0) == 0);
  }
  SECTION("truncated at many offsets") {
    for (std::size_t cut : {std::size_t{1}, std::size_t{7}, std::size_t{100}, real.size() / 3,
                            real.size() / 2, real.size() - 1}) {
      CAPTURE(cut);
      auto g = Graph::Parse(absl::string_view(real).substr(0, cut), "cut.onnx");
      REQUIRE_FALSE(g.ok());
      CHECK(std::string(g.status().message()).rfind("cut.onnx: ", 0) == 0);
    }
  }
  SECTION("a valid protobuf of another message") {
    onnx::TensorProto t;
    t.set_name("not a model");
    t.add_dims(3);
    std::string bytes;
    t.SerializeToString(&bytes);
    auto g = Graph::Parse(bytes, "tensor.pb");
    REQUIRE_FALSE(g.ok());
    CHECK(std::string(g.status().message()).find("tensor.pb: ") == 0);
  }
  SECTION("a FIFO with no writer does not hang") {
    char dir_template[] = "/tmp/semmap-fifo-XXXXXX";
    REQUIRE(::mkdtemp(dir_template) != nullptr);
    const std::string fifo = std::string(dir_template) + "/model.onnx";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    for (semmap::Loader loader : {semmap::Loader::kWireScan, semmap::Loader::kProtobuf}) {
      semmap::GraphOptions options;
      options.loader = loader;
      auto g = Graph::Load(fifo, options);
      REQUIRE_FALSE(g.ok());
      CHECK(std::string(g.status().message()) ==
            fifo + ": not a regular file (a FIFO, socket or device)");
    }
    auto m = semmap::Manifest::Load(fifo);
    REQUIRE_FALSE(m.ok());
    CHECK(std::string(m.status().message()).find("not a regular file") != std::string::npos);
    ::unlink(fifo.c_str());
    ::rmdir(dir_template);
  }
  SECTION("a directory") {
    auto g = Graph::Load(SEMMAP_FIXTURES_DIR);
    REQUIRE_FALSE(g.ok());
    CHECK(std::string(g.status().message()).find("is a directory") != std::string::npos);
  }
  SECTION("over the node limit") {
    semmap::GraphOptions options;
    options.max_nodes = 10;
    auto g = Graph::Parse(real, "big.onnx", options);
    REQUIRE_FALSE(g.ok());
    CHECK(std::string(g.status().message()).find("more than 10 nodes") != std::string::npos);
  }
}

TEST_CASE("A 1 MB node name and deep subgraph nesting are handled", "[graph]") {
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  const std::string huge = "/" + std::string(1 << 20, 'a') + "/Relu";
  AddNode(graph, huge, "Relu", {"x"}, {"y"});
  auto g = Graph::Parse(Serialize(model), "huge.onnx");
  REQUIRE(g.ok());
  CHECK(g->node(0).name.size() == huge.size());
  for (semmap::Loader loader : {semmap::Loader::kWireScan, semmap::Loader::kProtobuf}) {
    semmap::GraphOptions small;
    small.loader = loader;
    small.max_name_bytes = 1000;
    auto refused = Graph::Parse(Serialize(model), "huge.onnx", small);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(refused.status().message()).find("huge.onnx: node 0") == 0);
    CHECK(std::string(refused.status().message()).find("GraphOptions::max_name_bytes") !=
          std::string::npos);
  }

  auto deep = semmap_test::MakeNestedIfModel(200);
  auto d = Graph::Parse(Serialize(deep), "deep.onnx");
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(d.status().message()).rfind("deep.onnx: ", 0) == 0);
}

TEST_CASE("A graph large enough to index on two cores gets the same ids, producers and consumers",
          "[graph]") {
  // Above the size from which ids, values and consumers are built on two
  // threads; the answers are checked against the chain's own structure,
  // over both halves of the nodes (each resolved on its own thread), with
  // both loaders.
  constexpr int kNodes = 100000;
  auto model = MakeModel();
  auto* graph = model.mutable_graph();
  graph->add_input()->set_name("v-1");
  auto* w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(1);
  w->add_dims(1);
  w->add_float_data(0.5F);
  auto name_of = [](int i) -> std::string {
    if (i % 1000 == 999) return "dup";
    if (i % 1500 == 1) return "";
    return "n" + std::to_string(i);
  };
  for (int i = 0; i < kNodes; ++i) {
    AddNode(graph, name_of(i), "Mul", {"v" + std::to_string(i - 1), "w"},
            {"v" + std::to_string(i)});
  }
  // The last node's output is read inside an If body: the If consumes it too.
  auto* if_node = AddNode(graph, "if", "If", {"v" + std::to_string(kNodes - 1)}, {"out"});
  auto* branch = if_node->add_attribute();
  branch->set_name("then_branch");
  branch->set_type(onnx::AttributeProto::GRAPH);
  AddNode(branch->mutable_g(), "inner", "Neg", {"v" + std::to_string(kNodes - 1)}, {"inner_out"});
  const std::string bytes = Serialize(model);

  for (const auto loader : {semmap::Loader::kWireScan, semmap::Loader::kProtobuf}) {
    semmap::GraphOptions options;
    options.loader = loader;
    auto g = Graph::Parse(bytes, "chain.onnx", options);
    REQUIRE(g.ok());
    REQUIRE(g->size() == static_cast<std::size_t>(kNodes + 2));
    const semmap::ValueId weight = g->value("w");
    REQUIRE(weight != semmap::kNoValue);
    CHECK(g->initializerOf(weight) != nullptr);
    CHECK(g->consumers(weight).size() == static_cast<std::size_t>(kNodes));
    std::size_t bad_ids = 0, bad_edges = 0;
    for (int i = 0; i < kNodes; ++i) {
      const semmap::Node& n = g->node(i);
      const std::string name = name_of(i);
      const std::string expected_id =
          name.empty() || name == "dup" ? name + "#" + std::to_string(i) : name;
      if (n.id != expected_id || g->find(expected_id) != i) ++bad_ids;
      const semmap::ValueId in = n.input_values[0];
      const semmap::ValueId out = n.output_values[0];
      if (n.input_values[1] != weight || g->valueName(out) != "v" + std::to_string(i) ||
          g->producer(out) != i ||
          (i == 0 ? in != semmap::kNoValue && g->producer(in) != kNoNode
                  : g->producer(in) != i - 1)) {
        ++bad_edges;
      }
      const auto consumers = g->consumers(out);
      if (i + 1 < kNodes) {
        if (consumers.size() != 1 || consumers[0] != i + 1) ++bad_edges;
      } else if (consumers.size() != 2 || consumers[0] != kNodes || consumers[1] != kNodes + 1) {
        ++bad_edges;  // the If and the node inside its body
      }
    }
    CHECK(bad_ids == 0);
    CHECK(bad_edges == 0);
    CHECK(g->find("dup") == kNoNode);
    CHECK(g->node(kNodes + 1).id == "inner");
  }
}
