#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "catch2/catch.hpp"
#include "mapped_fixture.h"
#include "onnx/onnx_pb.h"
#include "semmap/extract.h"
#include "semmap/semmap.h"
#include "temp_dir.h"
#include "test_util.h"

using semmap::ExtractModule;
using semmap_test::LoadMapped;
using semmap_test::ReadBytes;
using semmap_test::TempDir;
using semmap_test::WriteBytes;

namespace {

onnx::ModelProto ParseModel(const std::string& path) {
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(ReadBytes(path)));
  return model;
}

// A synthetic model on disk, mapped from its scopes (no manifest).
struct SyntheticModel {
  std::string path;
  std::optional<semmap::Graph> graph;
  std::optional<semmap::SemanticMapper> mapper;
};

std::unique_ptr<SyntheticModel> WriteAndMap(const onnx::ModelProto& model, const std::string& path) {
  auto m = std::make_unique<SyntheticModel>();
  m->path = path;
  WriteBytes(path, semmap_test::Serialize(model));
  auto g = semmap::Graph::Load(path);
  REQUIRE(g.ok());
  m->graph.emplace(*std::move(g));
  auto mapper = semmap::SemanticMapper::Create(*m->graph, nullptr);
  REQUIRE(mapper.ok());
  m->mapper.emplace(*std::move(mapper));
  return m;
}

onnx::ValueInfoProto* Float(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return v;
}

// x -> /a/Relu -> /lin/MatMul(W) -> /b/Relu -> y, W with external data.
onnx::ModelProto ExternalDataModel() {
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  Float(g->add_input(), "x");
  Float(g->add_output(), "y");
  semmap_test::AddNode(g, "/a/Relu", "Relu", {"x"}, {"a"});
  semmap_test::AddNode(g, "/lin/MatMul", "MatMul", {"a", "W"}, {"l"});
  semmap_test::AddNode(g, "/b/Relu", "Relu", {"l"}, {"y"});
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(2);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  return model;
}

}  // namespace

TEST_CASE("Extracting BERT layer 1 gives its nodes between two boundary values",
          "[extract][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  TempDir tmp;
  const std::string out = tmp.file("layer1.onnx");
  auto r = ExtractModule(*f->mapper, f->model_path(), "bert.encoder.layer.1", out);
  REQUIRE(r.ok());
  CHECK(r->module == "bert.encoder.layer.1");
  // Layer 0's output flows in, with the attention mask computed in bert.
  CHECK(std::find(r->inputs.begin(), r->inputs.end(),
                  "/bert/encoder/layer.0/output/LayerNorm/LayerNormalization_output_0") !=
        r->inputs.end());
  REQUIRE(r->outputs.size() == 1);
  CHECK(r->outputs[0] == "/bert/encoder/layer.1/output/LayerNorm/LayerNormalization_output_0");
  CHECK(r->untyped == r->inputs.size() + r->outputs.size());  // TorchScript writes no value_info

  const onnx::ModelProto model = ParseModel(out);
  CHECK(static_cast<std::size_t>(model.graph().node_size()) == r->nodes);
  CHECK(static_cast<std::size_t>(model.graph().initializer_size()) == r->initializers.size());
  CHECK(model.opset_import_size() >= 1);
  for (const auto& node : model.graph().node()) {
    CAPTURE(node.name());
    auto m = f->mapper->moduleFor(node.name());
    if (!m.ok()) continue;  // unnamed or duplicated name
    CHECK((semmap_test::InSubtree(std::string(m->module_path), "bert.encoder.layer.1") ||
           node.op_type() == "Constant"));
  }
  // Named parameters are layer 1's; transposed MatMul weights are "onnx::MatMul_N".
  for (const auto& t : model.graph().initializer()) {
    CAPTURE(t.name());
    CHECK((t.name().find("encoder.layer.1.") != std::string::npos ||
           t.name().rfind("onnx::MatMul_", 0) == 0));
  }
  REQUIRE(model.metadata_props_size() == 1);
  CHECK(model.metadata_props(0).value() == "bert.encoder.layer.1");
}

TEST_CASE("Extraction refuses unknown and empty modules without writing", "[extract][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  TempDir tmp;
  const std::string out = tmp.file("out.onnx");
  auto unknown = ExtractModule(*f->mapper, f->model_path(), "bert.nope", out);
  CHECK(unknown.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(unknown.status().message()), Catch::Contains("no module \"bert.nope\""));
  auto empty = ExtractModule(*f->mapper, f->model_path(), "bert.embeddings.dropout", out);
  CHECK(empty.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(empty.status().message()), Catch::Contains("holds no node"));
  auto same = ExtractModule(*f->mapper, f->model_path(), "bert.encoder.layer.1", f->model_path());
  CHECK(same.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::filesystem::is_empty(tmp.path()));
}

TEST_CASE("Extraction keeps external data references only next to the source", "[extract]") {
  TempDir tmp;
  auto m = WriteAndMap(ExternalDataModel(), tmp.file("model.onnx"));
  REQUIRE(m->mapper->moduleFor("/lin/MatMul")->module_path == "lin");

  std::filesystem::create_directory(tmp.file("elsewhere"));
  auto refused = ExtractModule(*m->mapper, m->path, "lin", tmp.file("elsewhere/lin.onnx"));
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.status().message()),
             Catch::Contains("\"W\"") && Catch::Contains("weights.bin"));
  CHECK(std::filesystem::is_empty(tmp.file("elsewhere")));

  auto kept = ExtractModule(*m->mapper, m->path, "lin", tmp.file("lin.onnx"));
  REQUIRE(kept.ok());
  CHECK(kept->external_tensors == 1);
  CHECK(kept->inputs == std::vector<std::string>{"a"});
  CHECK(kept->outputs == std::vector<std::string>{"l"});
  const onnx::ModelProto model = ParseModel(tmp.file("lin.onnx"));
  REQUIRE(model.graph().initializer_size() == 1);
  CHECK(model.graph().initializer(0).external_data(0).value() == "weights.bin");
  // Graph outputs of the source stay outputs, with their types.
  auto tail = ExtractModule(*m->mapper, m->path, "b", tmp.file("b.onnx"));
  REQUIRE(tail.ok());
  CHECK(tail->outputs == std::vector<std::string>{"y"});
  CHECK(tail->untyped == 1);  // "l" has no value_info
}

TEST_CASE("Extraction takes If nodes whole and refuses modules living only in bodies",
          "[extract]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  Float(g->add_input(), "x");
  g->add_input()->set_name("c");
  Float(g->add_output(), "y");
  semmap_test::AddNode(g, "/pre/Relu", "Relu", {"x"}, {"p"});
  onnx::NodeProto* branch = semmap_test::AddNode(g, "/top/If", "If", {"c"}, {"y"});
  for (const char* name : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* a = branch->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* body = a->mutable_g();
    body->set_name(name);
    semmap_test::AddNode(body, std::string("/inner/Neg_") + name, "Neg", {"p"}, {std::string("o_") + name});
    Float(body->add_output(), std::string("o_") + name);
  }
  TempDir tmp;
  auto m = WriteAndMap(model, tmp.file("model.onnx"));
  auto inner = ExtractModule(*m->mapper, m->path, "inner", tmp.file("inner.onnx"));
  CHECK(inner.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(inner.status().message()), Catch::Contains("only inside If/Loop/Scan"));

  auto top = ExtractModule(*m->mapper, m->path, "top", tmp.file("top.onnx"));
  REQUIRE(top.ok());
  // The bodies read p from outside: it is an input, as is the condition.
  CHECK(top->inputs == std::vector<std::string>{"c", "p"});
  CHECK(top->outputs == std::vector<std::string>{"y"});
}

TEST_CASE("Extraction copies the source's bytes at the wire level, whatever their order",
          "[extract][wire]") {
  onnx::ModelProto model = ExternalDataModel();
  model.set_doc_string("not copied");
  onnx::FunctionProto* fn = model.add_functions();
  fn->set_name("F");
  fn->set_domain("local");
  // The graph written in two occurrences and the functions first: protobuf
  // merges the occurrences, and so does the wire index.
  onnx::ModelProto functions_only;
  *functions_only.mutable_functions() = model.functions();
  onnx::ModelProto first = model;
  first.clear_functions();
  first.mutable_graph()->mutable_node()->DeleteSubrange(1, 2);
  onnx::ModelProto second;
  *second.mutable_graph()->mutable_node() = model.graph().node();
  second.mutable_graph()->mutable_node()->DeleteSubrange(0, 1);
  TempDir tmp;
  const std::string path = tmp.file("model.onnx");
  WriteBytes(path, semmap_test::Serialize(functions_only) + semmap_test::Serialize(first) +
                       semmap_test::Serialize(second));
  auto graph = semmap::Graph::Load(path);
  REQUIRE(graph.ok());
  REQUIRE(graph->size() == 3);
  auto mapper = semmap::SemanticMapper::Create(*graph, nullptr);
  REQUIRE(mapper.ok());

  auto result = ExtractModule(*mapper, path, "lin", tmp.file("lin.onnx"));
  REQUIRE(result.ok());
  // What protobuf gives when the same model is built from the parsed source.
  onnx::ModelProto expected;
  expected.set_ir_version(model.ir_version());
  *expected.mutable_opset_import() = model.opset_import();
  expected.set_producer_name(model.producer_name());
  expected.set_producer_version("");
  expected.set_domain("");
  expected.set_model_version(0);
  *expected.mutable_functions() = model.functions();
  auto* meta = expected.add_metadata_props();
  meta->set_key(std::string(semmap::kExtractedModuleKey));
  meta->set_value("lin");
  onnx::GraphProto* g = expected.mutable_graph();
  g->set_name("g:lin");
  *g->add_initializer() = model.graph().initializer(0);
  g->add_input()->set_name("a");
  *g->add_node() = model.graph().node(1);
  g->add_output()->set_name("l");
  const std::string bytes = ReadBytes(tmp.file("lin.onnx"));
  CHECK(bytes == expected.SerializeAsString());
  CHECK(result->bytes_written == bytes.size());

  SECTION("a truncated source names the file and the byte offset") {
    const std::string whole = ReadBytes(path);
    WriteBytes(path, whole.substr(0, whole.size() - 7));
    auto r = ExtractModule(*mapper, path, "lin", tmp.file("cut.onnx"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(r.status().message()),
               Catch::StartsWith(path + ": not a valid ONNX model: byte offset "));
    CHECK_FALSE(std::filesystem::exists(tmp.file("cut.onnx")));
  }
}

TEST_CASE("Stages read the mapped graph's own bytes, or the file, and write the same stages",
          "[extract][fixture]") {
  // A mapper over Graph::Load keeps the file's mapping, which the stages
  // read; one over Graph::Parse (bytes in memory) makes them map the file.
  auto loaded = LoadMapped("bert-seqcls.torchscript");
  auto parsed_graph = semmap::Graph::Parse(ReadBytes(loaded->model_path()), "in memory");
  REQUIRE(parsed_graph.ok());
  auto parsed = semmap::SemanticMapper::Create(*parsed_graph, loaded->manifest);
  REQUIRE(parsed.ok());
  TempDir tmp;
  semmap::StageOptions options;
  options.stages = 3;
  auto a = semmap::SplitStages(*loaded->mapper, loaded->model_path(), tmp.file("a.onnx"), options);
  auto b = semmap::SplitStages(*parsed, loaded->model_path(), tmp.file("b.onnx"), options);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->stages.size() == 3);
  REQUIRE(b->stages.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CAPTURE(k);
    CHECK(a->stages[k].nodes == b->stages[k].nodes);
    CHECK(ReadBytes(a->stages[k].path) == ReadBytes(b->stages[k].path));
    const onnx::ModelProto stage = ParseModel(a->stages[k].path);
    CHECK(static_cast<std::size_t>(stage.graph().node_size()) == a->stages[k].nodes);
  }

  SECTION("a file changed since it was mapped is refused") {
    onnx::ModelProto other = ParseModel(loaded->model_path());
    other.mutable_graph()->mutable_node(3)->set_name("renamed");
    const std::string path = tmp.file("changed.onnx");
    WriteBytes(path, semmap_test::Serialize(other));
    auto changed = semmap::SplitStages(*parsed, path, tmp.file("c.onnx"), options);
    REQUIRE_FALSE(changed.ok());
    CHECK(changed.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(std::string(changed.status().message()).find("node 3 (\"renamed\") differs") !=
          std::string::npos);
  }
}
