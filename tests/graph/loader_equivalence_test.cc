// The wire-scan loader against the protobuf loader: the same Graph (every
// field, every index) and the same mappings on every fixture of
// fixtures/index.json and on hand-built edge cases, and statuses rather
// than crashes on malformed files.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "graph/graph_builder.h"
#include "graph/wire_loader.h"
#include "nlohmann/json.hpp"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"
#include "test_util.h"

using semmap::Graph;
using semmap::GraphOptions;
using semmap::Loader;
using semmap_test::AddNode;
using semmap_test::Fixture;
using semmap_test::MakeModel;
using semmap_test::Serialize;

namespace {

GraphOptions With(Loader loader) {
  GraphOptions options;
  options.loader = loader;
  return options;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> FixtureDirs() {
  std::ifstream in(std::string(SEMMAP_FIXTURES_DIR) + "/index.json");
  const nlohmann::json index = nlohmann::json::parse(in);
  std::vector<std::string> dirs;
  for (const auto& f : index.at("fixtures")) dirs.push_back(f.at("dir").get<std::string>());
  return dirs;
}

void CheckSameGraph(const Graph& a, const Graph& b) {
  CHECK(a.irVersion() == b.irVersion());
  CHECK(a.opset() == b.opset());
  CHECK(a.producerName() == b.producerName());
  CHECK(a.producerVersion() == b.producerVersion());
  CHECK(a.modelMetadata() == b.modelMetadata());
  CHECK(a.inputs() == b.inputs());
  CHECK(a.outputs() == b.outputs());
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const semmap::Node& x = a.node(static_cast<semmap::NodeId>(i));
    const semmap::Node& y = b.node(static_cast<semmap::NodeId>(i));
    CAPTURE(i, x.id);
    CHECK(x.id == y.id);
    CHECK(x.name == y.name);
    CHECK(x.op_type == y.op_type);
    CHECK(x.domain == y.domain);
    CHECK(x.inputs == y.inputs);
    CHECK(x.outputs == y.outputs);
    CHECK(x.attribute_names == y.attribute_names);
    CHECK(x.metadata == y.metadata);
    CHECK(x.doc_string == y.doc_string);
    CHECK(x.subgraph == y.subgraph);
    CHECK(a.find(x.id) == b.find(y.id));
    CHECK(a.find(x.name) == b.find(y.name));
    for (absl::string_view v : x.inputs) {
      CHECK(a.producer(v, x.subgraph) == b.producer(v, x.subgraph));
    }
    for (absl::string_view v : x.outputs) {
      CHECK(a.producer(v, x.subgraph) == b.producer(v, x.subgraph));
      const auto ca = a.consumers(v, x.subgraph);
      const auto cb = b.consumers(v, x.subgraph);
      CHECK(std::vector<semmap::NodeId>(ca.begin(), ca.end()) ==
            std::vector<semmap::NodeId>(cb.begin(), cb.end()));
    }
  }
  REQUIRE(a.subgraphs().size() == b.subgraphs().size());
  for (std::size_t i = 0; i < a.subgraphs().size(); ++i) {
    const semmap::Subgraph& x = a.subgraphs()[i];
    const semmap::Subgraph& y = b.subgraphs()[i];
    CAPTURE(i, x.name);
    CHECK(x.kind == y.kind);
    CHECK(x.name == y.name);
    CHECK(x.owner == y.owner);
    CHECK(x.attribute == y.attribute);
    CHECK(x.domain == y.domain);
    CHECK(x.parent == y.parent);
    CHECK(x.depth == y.depth);
  }
  REQUIRE(a.initializers().size() == b.initializers().size());
  for (std::size_t i = 0; i < a.initializers().size(); ++i) {
    const semmap::TensorInfo& x = a.initializers()[i];
    const semmap::TensorInfo& y = b.initializers()[i];
    CAPTURE(i, x.name);
    CHECK(x.name == y.name);
    CHECK(x.elem_type == y.elem_type);
    CHECK(x.dims == y.dims);
    CHECK(x.external == y.external);
    CHECK(x.subgraph == y.subgraph);
    CHECK((a.initializer(x.name) == nullptr) == (b.initializer(y.name) == nullptr));
    for (absl::string_view v : a.inputs()) {
      const auto ca = a.consumers(v);
      const auto cb = b.consumers(v);
      CHECK(ca.size() == cb.size());
    }
  }
}

// Both loaders on the same bytes: either both fail, or both succeed with
// the same Graph. The wire scan skips payloads it does not read, so it
// may accept what protobuf rejects, never the reverse.
void CheckSameOutcome(const std::string& bytes, const std::string& origin) {
  auto proto = Graph::Parse(bytes, origin, With(Loader::kProtobuf));
  auto wire = Graph::Parse(bytes, origin, With(Loader::kWireScan));
  if (proto.ok()) {
    REQUIRE(wire.ok());
    CheckSameGraph(*proto, *wire);
  }
  if (!wire.ok()) {
    CHECK(std::string(wire.status().message()).rfind(origin + ": ", 0) == 0);
  }
}

void AddEntry(onnx::NodeProto* node, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto entry;
  entry.set_key(key);
  entry.set_value(value);
  node->GetReflection()->MutableUnknownFields(node)->AddLengthDelimited(
      9, entry.SerializeAsString());
}

// A model exercising every field the loaders read: subgraphs (GRAPH and
// GRAPHS), sparse and external initializers, node metadata_props, model
// metadata, functions, doc strings and domains.
onnx::ModelProto RichModel() {
  onnx::ModelProto model = MakeModel();
  model.set_producer_version("1.2.3");
  auto* md = model.add_metadata_props();
  md->set_key("k");
  md->set_value("v");
  auto* ms = model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->add_input()->set_name("cond");
  graph->add_input()->set_name("x");
  graph->add_output()->set_name("y");
  onnx::TensorProto* w = graph->add_initializer();
  w->set_name("layer.weight");
  w->set_data_type(1);
  w->add_dims(4);
  w->add_dims(2);
  w->set_raw_data(std::string(32, '\1'));
  onnx::TensorProto* ext = graph->add_initializer();
  ext->set_name("ext.weight");
  ext->set_data_type(10);
  ext->add_dims(7);
  ext->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = ext->add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");
  onnx::SparseTensorProto* sparse = graph->add_sparse_initializer();
  sparse->mutable_values()->set_name("sparse.values");
  sparse->mutable_values()->add_dims(3);
  sparse->mutable_indices()->add_dims(3);
  sparse->add_dims(10);
  graph->add_sparse_initializer();  // no values: an unnamed initializer
  onnx::NodeProto* mm = AddNode(graph, "/layer/MatMul", "MatMul", {"x", "layer.weight"}, {"h"});
  mm->set_doc_string("doc");
  AddEntry(mm, "pkg.torch.onnx.name_scopes", "['', 'layer']");
  AddEntry(mm, "namespace", "layer: Linear");
  onnx::NodeProto* if_node = AddNode(graph, "/If", "If", {"cond"}, {"out"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* attr = if_node->add_attribute();
    attr->set_name(branch);
    attr->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = attr->mutable_g();
    body->set_name(branch);
    body->add_initializer()->set_name("inner.c");
    AddNode(body, "/inner/Add", "Add", {"h", "inner.c"}, {"t"});
  }
  onnx::NodeProto* scan = AddNode(graph, "/Scan", "Scan", {"out"}, {"s"});
  onnx::AttributeProto* bodies = scan->add_attribute();
  bodies->set_name("bodies");
  bodies->set_type(onnx::AttributeProto::GRAPHS);
  for (int i = 0; i < 2; ++i) {
    onnx::GraphProto* body = bodies->add_graphs();
    body->add_input()->set_name("loop_in");
    AddNode(body, "", "Neg", {"loop_in"}, {"loop_out"});
  }
  onnx::AttributeProto* axis = scan->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  onnx::NodeProto* custom = AddNode(graph, "/Custom", "MyFn", {"s"}, {"y"});
  custom->set_domain("local");
  onnx::FunctionProto* fn = model.add_functions();
  fn->set_name("MyFn");
  fn->set_domain("local");
  fn->add_input("a");
  fn->add_output("b");
  onnx::NodeProto* inner = fn->add_node();
  inner->set_name("/fn/Relu");
  inner->set_op_type("Relu");
  inner->add_input("a");
  inner->add_output("b");
  return model;
}

}  // namespace

TEST_CASE("Both loaders give the same Graph and mappings on every fixture", "[loader]") {
  const std::vector<std::string> dirs = FixtureDirs();
  REQUIRE(dirs.size() > 10);
  for (const std::string& dir : dirs) {
    CAPTURE(dir);
    auto proto = Graph::Load(Fixture(dir, "model.onnx"), With(Loader::kProtobuf));
    auto wire = Graph::Load(Fixture(dir, "model.onnx"), With(Loader::kWireScan));
    REQUIRE(proto.ok());
    REQUIRE(wire.ok());
    CheckSameGraph(*proto, *wire);

    auto manifest = semmap::Manifest::Load(Fixture(dir, "manifest.json"));
    REQUIRE(manifest.ok());
    auto mp = semmap::SemanticMapper::Create(*proto, &*manifest);
    auto mw = semmap::SemanticMapper::Create(*wire, &*manifest);
    REQUIRE(mp.ok());
    REQUIRE(mw.ok());
    for (std::size_t i = 0; i < proto->size(); ++i) {
      const semmap::Mapping& a = mp->moduleFor(static_cast<semmap::NodeId>(i));
      const semmap::Mapping& b = mw->moduleFor(static_cast<semmap::NodeId>(i));
      CAPTURE(i, proto->node(static_cast<semmap::NodeId>(i)).id);
      CHECK(a.module_path == b.module_path);
      CHECK(a.class_name == b.class_name);
      CHECK(a.confidence == b.confidence);
      CHECK(a.strategy == b.strategy);
      CHECK(a.evidence == b.evidence);
    }
  }
}

TEST_CASE("Both loaders agree on every field of a hand-built model", "[loader]") {
  const std::string bytes = Serialize(RichModel());
  auto proto = Graph::Parse(bytes, "rich.onnx", With(Loader::kProtobuf));
  auto wire = Graph::Parse(bytes, "rich.onnx", With(Loader::kWireScan));
  REQUIRE(proto.ok());
  REQUIRE(wire.ok());
  CheckSameGraph(*proto, *wire);
  CHECK(wire->subgraphs().size() == 6);  // main, 2 branches, 2 bodies, 1 function
  CHECK(wire->initializers().size() == 6);
  const semmap::TensorInfo* ext = wire->initializer("ext.weight");
  REQUIRE(ext != nullptr);
  CHECK(ext->external);
  CHECK(ext->dims == std::vector<std::int64_t>{7});
  CHECK(wire->node(0).metadata.size() == 2);
  CHECK(wire->node(0).doc_string == "doc");

  SECTION("a copy has working indexes of its own") {
    Graph copy = *wire;
    wire = absl::InvalidArgumentError("gone");
    CheckSameGraph(*proto, copy);
  }
  SECTION("protobuf's merge rules: a serialized model twice is the merge of both") {
    CheckSameOutcome(bytes + bytes, "twice.onnx");
    onnx::ModelProto extra;
    extra.mutable_graph()->set_name("renamed");
    AddNode(extra.mutable_graph(), "/late/Relu", "Relu", {"y"}, {"z"});
    extra.set_producer_name("other");
    CheckSameOutcome(bytes + Serialize(extra), "merged.onnx");
    auto merged = Graph::Parse(bytes + Serialize(extra), "merged.onnx");
    REQUIRE(merged.ok());
    CHECK(merged->subgraphs()[0].name == "renamed");
    CHECK(merged->producerName() == "other");
  }
  SECTION("unpacked dims, unknown enum values and unknown fields") {
    onnx::ModelProto model = RichModel();
    onnx::TensorProto* w = model.mutable_graph()->mutable_initializer(0);
    // dims as unpacked varints (field 1, wire type 0) after the packed ones.
    w->GetReflection()->MutableUnknownFields(w)->AddVarint(1, 9);
    onnx::AttributeProto* attr = model.mutable_graph()->mutable_node(2)->mutable_attribute(1);
    attr->GetReflection()->MutableUnknownFields(attr)->AddVarint(20, 99);
    auto* node = model.mutable_graph()->mutable_node(0);
    node->GetReflection()->MutableUnknownFields(node)->AddLengthDelimited(9, "\xff");  // bad entry
    node->GetReflection()->MutableUnknownFields(node)->AddVarint(9, 1);
    node->GetReflection()->MutableUnknownFields(node)->AddFixed64(1234, 5);
    node->GetReflection()->MutableUnknownFields(node)->AddGroup(77)->AddVarint(1, 2);
    CheckSameOutcome(Serialize(model), "unusual.onnx");
  }
}

TEST_CASE("The wire loader turns malformed files into statuses", "[loader]") {
  const std::string rich = Serialize(RichModel());
  const std::string real = ReadBytes(Fixture("bert-seqcls.torchscript", "model.onnx"));
  REQUIRE(real.size() > 1000);

  SECTION("truncated at every offset of a small model") {
    for (std::size_t cut = 1; cut < rich.size(); ++cut) {
      CAPTURE(cut);
      CheckSameOutcome(rich.substr(0, cut), "cut.onnx");
    }
  }
  SECTION("truncated at many offsets of a real export") {
    for (std::size_t cut = 1; cut < real.size(); cut += real.size() / 97 + 1) {
      CAPTURE(cut);
      auto wire = Graph::Parse(absl::string_view(real).substr(0, cut), "cut.onnx");
      REQUIRE_FALSE(wire.ok());
      CHECK(wire.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK(std::string(wire.status().message()).rfind("cut.onnx: ", 0) == 0);
    }
  }
  SECTION("a length field past the end of the file") {
    // ir_version 8, then a graph (field 7) claiming 1 GB.
    const std::string bytes = std::string("\x08\x08\x3a\x80\x80\x80\x80\x04", 8) + "abc";
    auto wire = Graph::Parse(bytes, "len.onnx");
    REQUIRE_FALSE(wire.ok());
    const std::string message(wire.status().message());
    CHECK(message.find("len.onnx: ") == 0);
    CHECK(message.find("byte offset 2") != std::string::npos);
    CHECK(message.find("field 7") != std::string::npos);
    CHECK(message.find("truncated") != std::string::npos);
  }
  SECTION("overlong varints, bad wire types, field 0, stray end-group") {
    for (const std::string& bytes :
         {std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
          std::string("\x0f\x01"), std::string("\x00\x01", 2), std::string("\x0c"),
          std::string("\x0b\x08\x01")}) {
      CAPTURE(bytes);
      CheckSameOutcome(bytes, "bad.onnx");
      CHECK_FALSE(Graph::Parse(bytes, "bad.onnx").ok());
    }
  }
  SECTION("bytes flipped at pseudo-random places") {
    std::uint32_t state = 7;
    for (int i = 0; i < 400; ++i) {
      std::string bytes = rich;
      for (int k = 0; k < 3; ++k) {
        state = state * 1664525u + 1013904223u;
        bytes[(state >> 8) % bytes.size()] = static_cast<char>(state >> 24);
      }
      CAPTURE(i);
      CheckSameOutcome(bytes, "flipped.onnx");
    }
  }
  SECTION("deep nesting") {
    onnx::ModelProto deep = semmap_test::MakeNestedIfModel(200);
    auto wire = Graph::Parse(Serialize(deep), "deep.onnx");
    REQUIRE_FALSE(wire.ok());
    CHECK(wire.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(wire.status().message()).find("max_subgraph_depth") != std::string::npos);
    GraphOptions roomy;
    roomy.max_subgraph_depth = 250;
    auto ok = Graph::Parse(Serialize(deep), "deep.onnx", roomy);
    REQUIRE(ok.ok());
    CHECK(ok->subgraphs().size() == 201);
  }
}

TEST_CASE("A main graph walked on every core gives the Graph a serial walk gives", "[loader]") {
  // Large enough for the wire scan to walk the main graph's nodes on
  // several threads (when the machine has several cores): op types and
  // domains first seen in every range, doc strings, metadata, attributes,
  // repeated and empty names, against the protobuf loader (one thread).
  constexpr int kNodes = 100000;
  onnx::ModelProto model = MakeModel();
  onnx::GraphProto* graph = model.mutable_graph();
  graph->add_input()->set_name("x");
  for (int i = 0; i < kNodes; ++i) {
    const std::string name = i % 997 == 5 ? "dup" : i % 1009 == 3 ? "" : "/n" + std::to_string(i);
    onnx::NodeProto* n =
        AddNode(graph, name, "Op" + std::to_string(i / 20000 + i % 3),
                {i == 0 ? "x" : "v" + std::to_string(i - 1), "x"}, {"v" + std::to_string(i)});
    if (i % 4 == 0) n->set_domain(i % 8 == 0 ? "" : "custom" + std::to_string(i / 30000));
    if (i % 7 == 0) n->set_doc_string("doc " + std::to_string(i));
    if (i % 11 == 0) semmap_test::AddNodeMetadata(n, "pkg.torch.onnx.name_scopes", "['m']");
    if (i % 3 == 0) {
      onnx::AttributeProto* a = n->add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(1);
    }
  }
  graph->add_output()->set_name("v" + std::to_string(kNodes - 1));
  const std::string bytes = Serialize(model);
  auto proto = Graph::Parse(bytes, "wide.onnx", With(Loader::kProtobuf));
  auto wire = Graph::Parse(bytes, "wide.onnx", With(Loader::kWireScan));
  REQUIRE(proto.ok());
  REQUIRE(wire.ok());
  CheckSameGraph(*proto, *wire);

  SECTION("the same Graph whatever the number of threads") {
    // More workers than runs of nodes leaves some with nothing to walk.
    for (const std::size_t workers : {1, 2, 3, 7, 200}) {
      CAPTURE(workers);
      GraphOptions options = With(Loader::kWireScan);
      semmap::internal::GraphBuilder builder("wide.onnx", options, nullptr, true);
      REQUIRE(semmap::internal::LoadWithWireScan(bytes, "wide.onnx", options, &builder, workers)
                  .ok());
      CheckSameGraph(*proto, builder.Finish());
    }
  }
  SECTION("limits and malformed nodes give the serial walk's errors") {
    GraphOptions few = With(Loader::kWireScan);
    few.max_nodes = kNodes - 1;
    auto over = Graph::Parse(bytes, "wide.onnx", few);
    REQUIRE_FALSE(over.ok());
    CHECK(std::string(over.status().message()) ==
          "wide.onnx: more than 99999 nodes (GraphOptions::max_nodes)");
    GraphOptions short_lists = With(Loader::kWireScan);
    short_lists.max_list_entries = 2 * kNodes;
    auto lists = Graph::Parse(bytes, "wide.onnx", short_lists);
    REQUIRE_FALSE(lists.ok());
    CHECK(std::string(lists.status().message()).rfind("wide.onnx: more than 200000 inputs", 0) ==
          0);
    // A last node whose input claims more bytes than the node holds.
    onnx::ModelProto bad = model;
    bad.mutable_graph()->GetReflection()->MutableUnknownFields(bad.mutable_graph())
        ->AddLengthDelimited(1, std::string("\x0a\x09short", 7));
    auto malformed = Graph::Parse(Serialize(bad), "bad.onnx", With(Loader::kWireScan));
    REQUIRE_FALSE(malformed.ok());
    const std::string message(malformed.status().message());
    CHECK(message.rfind("bad.onnx: not a valid ONNX model: byte offset ", 0) == 0);
    CHECK(message.find("NodeProto") != std::string::npos);
  }
}

TEST_CASE("A parallel walk whose lists outgrow their estimate gives the serial walk's Graph",
          "[loader]") {
  // Each worker sizes its lists after its first 1024 nodes, at their rate:
  // here the first nodes read one value and the later ones a dozen, so the
  // lists outgrow the estimate and grow as they go.
  constexpr int kNodes = 70000;
  onnx::ModelProto model = MakeModel();
  onnx::GraphProto* graph = model.mutable_graph();
  graph->add_input()->set_name("x");
  for (int i = 0; i < kNodes; ++i) {
    onnx::NodeProto* n = AddNode(graph, "/n" + std::to_string(i), "Op",
                                 {i == 0 ? "x" : "v" + std::to_string(i - 1)},
                                 {"v" + std::to_string(i)});
    for (int k = 1; i >= 2048 && k < 12; ++k) n->add_input("v" + std::to_string(i - 1 - k));
  }
  graph->add_output()->set_name("v" + std::to_string(kNodes - 1));
  const std::string bytes = Serialize(model);
  auto proto = Graph::Parse(bytes, "growing.onnx", With(Loader::kProtobuf));
  REQUIRE(proto.ok());
  for (const std::size_t workers : {2, 3}) {
    CAPTURE(workers);
    GraphOptions options = With(Loader::kWireScan);
    semmap::internal::GraphBuilder builder("growing.onnx", options, nullptr, true);
    REQUIRE(
        semmap::internal::LoadWithWireScan(bytes, "growing.onnx", options, &builder, workers).ok());
    CheckSameGraph(*proto, builder.Finish());
  }
}
