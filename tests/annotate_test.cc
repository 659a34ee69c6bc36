#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "mapped_fixture.h"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"
#include "temp_dir.h"
#include "test_util.h"

using semmap::Annotate;
using semmap::AnnotateOptions;
using semmap::Graph;
using semmap_test::LoadMapped;
using semmap_test::ReadBytes;
using semmap_test::TempDir;
using semmap_test::WriteBytes;

namespace {

std::map<std::string, std::string> MetadataOf(const semmap::Node& n) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : n.metadata) {
    REQUIRE(out.count(key) == 0);  // no duplicate keys after annotating
    out[key] = value;
  }
  return out;
}

}  // namespace

TEST_CASE("Annotated models carry each node's mapping and nothing else changes",
          "[annotate][fixture]") {
  const std::string dir = GENERATE(std::string("bert-seqcls.torchscript"),
                                   std::string("t5-seq2seq-lm.torchscript"),
                                   std::string("gpt2-causal-lm.optimum.optimum-with-past"));
  CAPTURE(dir);
  auto f = LoadMapped(dir);
  TempDir tmp;
  const std::string out = tmp.file("annotated.onnx");
  auto result = Annotate(*f->mapper, f->model_path(), out);
  REQUIRE(result.ok());
  CHECK(result->nodes == f->graph->size());
  CHECK(result->mapped == f->mapper->mappedCount());

  auto annotated = Graph::Load(out);
  REQUIRE(annotated.ok());
  REQUIRE(annotated->size() == f->graph->size());
  for (std::size_t i = 0; i < annotated->size(); ++i) {
    const semmap::Node& before = f->graph->node(static_cast<semmap::NodeId>(i));
    const semmap::Node& after = annotated->node(static_cast<semmap::NodeId>(i));
    CAPTURE(before.id);
    CHECK(after.id == before.id);
    CHECK(after.op_type == before.op_type);
    CHECK(after.inputs == before.inputs);
    CHECK(after.outputs == before.outputs);
    CHECK(after.subgraph == before.subgraph);
    CHECK(after.attribute_names == before.attribute_names);
    const semmap::Mapping& m = f->mapper->moduleFor(static_cast<semmap::NodeId>(i));
    const auto meta = MetadataOf(after);
    REQUIRE(meta.count("semmap.module") == 1);
    CHECK(meta.at("semmap.module") == m.module_path);
    CHECK(meta.at("semmap.class") == m.qualified_class);
    CHECK(meta.at("semmap.strategy") == semmap::StrategyName(m.strategy));
    CHECK(std::stod(meta.at("semmap.confidence")) == Approx(m.confidence));
    if (m.mapped()) {
      CHECK(meta.at("namespace") == semmap::NamespaceOf(*f->mapper, static_cast<semmap::NodeId>(i)));
    }
  }
  std::vector<std::string> names_before, names_after;
  for (const auto& t : f->graph->initializers()) names_before.push_back(t.name);
  for (const auto& t : annotated->initializers()) names_after.push_back(t.name);
  CHECK(names_after == names_before);
  CHECK(annotated->inputs() == f->graph->inputs());
  CHECK(annotated->outputs() == f->graph->outputs());
  CHECK(annotated->opset() == f->graph->opset());

  // Annotating the annotated file again gives the same bytes.
  const std::string again = tmp.file("again.onnx");
  REQUIRE(Annotate(*f->mapper, out, again).ok());
  CHECK(ReadBytes(again) == ReadBytes(out));
}

TEST_CASE("The namespace follows the dynamo exporter's form", "[annotate][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  const semmap::NodeId id = f->graph->find("/bert/encoder/layer.0/attention/self/query/MatMul");
  REQUIRE(id != semmap::kNoNode);
  CHECK(semmap::NamespaceOf(*f->mapper, id) ==
        ": transformers.models.bert.modeling_bert.BertForSequenceClassification"
        "/bert: transformers.models.bert.modeling_bert.BertModel"
        "/bert.encoder: transformers.models.bert.modeling_bert.BertEncoder"
        "/bert.encoder.layer: torch.nn.modules.container.ModuleList"
        "/bert.encoder.layer.0: transformers.models.bert.modeling_bert.BertLayer"
        "/bert.encoder.layer.0.attention: transformers.models.bert.modeling_bert.BertAttention"
        "/bert.encoder.layer.0.attention.self: "
        "transformers.models.bert.modeling_bert.BertSdpaSelfAttention"
        "/bert.encoder.layer.0.attention.self.query: torch.nn.modules.linear.Linear"
        "/MatMul: MatMul");
}

TEST_CASE("An exporter's namespace is kept unless overwriting is asked for",
          "[annotate][fixture]") {
  auto f = LoadMapped("bert-seqcls.dynamo");
  TempDir tmp;
  std::size_t with_namespace = 0;
  for (const semmap::Node& n : f->graph->nodes()) with_namespace += MetadataOf(n).count("namespace");
  REQUIRE(with_namespace > 0);

  auto kept = Annotate(*f->mapper, f->model_path(), tmp.file("kept.onnx"));
  REQUIRE(kept.ok());
  CHECK(kept->namespaces_kept == with_namespace);
  auto kept_graph = Graph::Load(tmp.file("kept.onnx"));
  REQUIRE(kept_graph.ok());
  for (std::size_t i = 0; i < kept_graph->size(); ++i) {
    const auto before = MetadataOf(f->graph->node(static_cast<semmap::NodeId>(i)));
    const auto after = MetadataOf(kept_graph->node(static_cast<semmap::NodeId>(i)));
    if (before.count("namespace")) CHECK(after.at("namespace") == before.at("namespace"));
    // The exporter's other entries survive too.
    for (const auto& [key, value] : before) CHECK(after.at(key) == value);
  }

  AnnotateOptions overwrite;
  overwrite.overwrite_namespace = true;
  auto replaced = Annotate(*f->mapper, f->model_path(), tmp.file("replaced.onnx"), overwrite);
  REQUIRE(replaced.ok());
  CHECK(replaced->namespaces_kept == 0);
  auto replaced_graph = Graph::Load(tmp.file("replaced.onnx"));
  REQUIRE(replaced_graph.ok());
  for (std::size_t i = 0; i < replaced_graph->size(); ++i) {
    const auto meta = MetadataOf(replaced_graph->node(static_cast<semmap::NodeId>(i)));
    if (f->mapper->moduleFor(static_cast<semmap::NodeId>(i)).mapped()) {
      CHECK(meta.at("namespace") == semmap::NamespaceOf(*f->mapper, static_cast<semmap::NodeId>(i)));
    }
  }
}

TEST_CASE("The JSON doc_string form", "[annotate][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  TempDir tmp;
  AnnotateOptions options;
  options.doc_string_json = true;
  options.write_namespace = false;
  REQUIRE(Annotate(*f->mapper, f->model_path(), tmp.file("doc.onnx"), options).ok());
  auto g = Graph::Load(tmp.file("doc.onnx"));
  REQUIRE(g.ok());
  const semmap::NodeId id = g->find("/bert/encoder/layer.0/attention/self/query/MatMul");
  const auto doc = nlohmann::json::parse(g->node(id).doc_string);
  CHECK(doc["semmap"]["module"] == "bert.encoder.layer.0.attention.self.query");
  CHECK(doc["semmap"]["strategy"] == "exact_scope");
  CHECK(MetadataOf(g->node(id)).count("namespace") == 0);
}

TEST_CASE("Nodes inside subgraphs are annotated in Graph's order", "[annotate]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  semmap_test::AddNode(g, "/enc/Relu", "Relu", {"x"}, {"r"});
  onnx::NodeProto* cond = semmap_test::AddNode(g, "/enc/If", "If", {"c"}, {"y"});
  onnx::AttributeProto* then_branch = cond->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  semmap_test::AddNode(then_branch->mutable_g(), "/enc/then/Neg", "Neg", {"r"}, {"y"});
  onnx::AttributeProto* else_branch = cond->add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  semmap_test::AddNode(else_branch->mutable_g(), "/dec/else/Abs", "Abs", {"r"}, {"y"});
  semmap_test::AddNode(g, "/dec/Exp", "Exp", {"y"}, {"z"});
  TempDir tmp;
  WriteBytes(tmp.file("in.onnx"), semmap_test::Serialize(model));

  auto graph = Graph::Load(tmp.file("in.onnx"));
  REQUIRE(graph.ok());
  auto mapper = semmap::SemanticMapper::Create(*graph, nullptr);
  REQUIRE(mapper.ok());
  REQUIRE(Annotate(*mapper, tmp.file("in.onnx"), tmp.file("out.onnx")).ok());
  auto out = Graph::Load(tmp.file("out.onnx"));
  REQUIRE(out.ok());
  REQUIRE(out->size() == 5);
  for (std::size_t i = 0; i < out->size(); ++i) {
    const semmap::Node& n = out->node(static_cast<semmap::NodeId>(i));
    CAPTURE(n.id);
    CHECK(MetadataOf(n).at("semmap.module") ==
          mapper->moduleFor(static_cast<semmap::NodeId>(i)).module_path);
  }
  CHECK(MetadataOf(out->node(out->find("/dec/else/Abs"))).at("semmap.module") == "dec.else");
}

TEST_CASE("Annotate refuses to clobber its input and reports bad outputs", "[annotate][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  TempDir tmp;
  const std::string input = tmp.file("model.onnx");
  WriteBytes(input, ReadBytes(f->model_path()));
  const std::string original = ReadBytes(input);

  SECTION("output == input without allow_overwrite") {
    for (const std::string& spelling : {input, tmp.path() + "/./model.onnx"}) {
      auto r = Annotate(*f->mapper, input, spelling);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK(std::string(r.status().message()).find("refusing to overwrite") != std::string::npos);
    }
    CHECK(ReadBytes(input) == original);
  }
  SECTION("output == input with allow_overwrite") {
    AnnotateOptions options;
    options.allow_overwrite = true;
    REQUIRE(Annotate(*f->mapper, input, input, options).ok());
    auto g = Graph::Load(input);
    REQUIRE(g.ok());
    CHECK(MetadataOf(g->node(0)).count("semmap.module") == 1);
  }
  SECTION("missing output directory") {
    const std::string out = tmp.file("no/such/dir/out.onnx");
    auto r = Annotate(*f->mapper, input, out);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(std::string(r.status().message()).rfind(out + ": output directory", 0) == 0);
    CHECK(ReadBytes(input) == original);
  }
  SECTION("output is a directory") {
    auto r = Annotate(*f->mapper, input, tmp.path());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  }
  SECTION("read-only output directory") {
    if (::geteuid() == 0) {
      WARN("running as root: directory permissions do not apply; read-only case not checked");
    } else {
      const std::string ro = tmp.file("ro");
      REQUIRE(::mkdir(ro.c_str(), 0555) == 0);
      auto r = Annotate(*f->mapper, input, ro + "/out.onnx");
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == absl::StatusCode::kPermissionDenied);
      CHECK(ReadBytes(input) == original);
    }
  }
  SECTION("input is not the model the mapper was built on") {
    auto r = Annotate(*f->mapper, semmap_test::Fixture("gpt2-causal-lm.torchscript", "model.onnx"),
                      tmp.file("out.onnx"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK_FALSE(std::ifstream(tmp.file("out.onnx")).good());
  }
  SECTION("missing input") {
    auto r = Annotate(*f->mapper, tmp.file("none.onnx"), tmp.file("out.onnx"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
  }
}
