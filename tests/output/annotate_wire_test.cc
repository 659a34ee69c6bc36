// Annotate edits the file at the wire level (src/graph/wire_writer.h).
// These tests pin that the result is, field for field, what protobuf gives
// when the same edits are made on the parsed model and serialized, on real
// exports and on models with If/Loop bodies, GRAPHS attributes, model-local
// functions, external data and fields in unusual places; and that the
// writer keeps the input's bytes outside the edited fields.
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/unknown_field_set.h"
#include "graph/wire_writer.h"
#include "mapped_fixture.h"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"
#include "temp_dir.h"
#include "test_util.h"

using semmap::AnnotateOptions;
using semmap::Graph;
using semmap::NodeId;
using semmap_test::ReadBytes;
using semmap_test::TempDir;
using semmap_test::WriteBytes;

namespace {

constexpr int kMetadataProps = 9;  // NodeProto.metadata_props (onnx >= 1.16)

// metadata_props through protobuf, whichever onnx the tests are built with:
// a known repeated field (onnx >= 1.16) or unknown fields (older onnx).
class MetadataAccess {
 public:
  explicit MetadataAccess(onnx::NodeProto* node)
      : node_(node),
        field_(onnx::NodeProto::descriptor()->FindFieldByNumber(kMetadataProps)) {}

  // Removes the entries whose key `drop` selects, keeping the others' order.
  template <typename Pred>
  void Drop(Pred drop) {
    const google::protobuf::Reflection* r = node_->GetReflection();
    if (field_ != nullptr) {
      std::vector<std::string> kept;
      for (int i = 0; i < r->FieldSize(*node_, field_); ++i) {
        const google::protobuf::Message& entry = r->GetRepeatedMessage(*node_, field_, i);
        if (!drop(KeyOf(entry))) kept.push_back(entry.SerializeAsString());
      }
      r->ClearField(node_, field_);
      for (const std::string& bytes : kept) REQUIRE(r->AddMessage(node_, field_)->ParseFromString(bytes));
      return;
    }
    google::protobuf::UnknownFieldSet* fields = r->MutableUnknownFields(node_);
    for (int i = fields->field_count(); i-- > 0;) {
      const google::protobuf::UnknownField& f = fields->field(i);
      if (f.number() != kMetadataProps ||
          f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
        continue;
      }
      onnx::StringStringEntryProto entry;
      if (entry.ParseFromString(f.length_delimited()) && drop(entry.key())) {
        fields->DeleteSubrange(i, 1);
      }
    }
  }

  void Add(const std::string& key, const std::string& value) {
    semmap_test::AddNodeMetadata(node_, key, value);
  }

 private:
  static std::string KeyOf(const google::protobuf::Message& entry) {
    onnx::StringStringEntryProto parsed;
    REQUIRE(parsed.ParseFromString(entry.SerializeAsString()));
    return parsed.key();
  }

  onnx::NodeProto* node_;
  const google::protobuf::FieldDescriptor* field_;
};

// Graph's traversal order over the parsed model (graph.h).
template <typename Fn>
void VisitGraph(onnx::GraphProto* graph, Fn& visit);

template <typename Fn>
void VisitNode(onnx::NodeProto* node, Fn& visit) {
  visit(node);
  for (onnx::AttributeProto& attr : *node->mutable_attribute()) {
    if (attr.type() == onnx::AttributeProto::GRAPH || attr.has_g()) VisitGraph(attr.mutable_g(), visit);
    for (onnx::GraphProto& body : *attr.mutable_graphs()) VisitGraph(&body, visit);
  }
}

template <typename Fn>
void VisitGraph(onnx::GraphProto* graph, Fn& visit) {
  for (onnx::NodeProto& node : *graph->mutable_node()) VisitNode(&node, visit);
}

// What Annotate writes, done with protobuf: parse, edit each node as
// AnnotateOptions asks, serialize.
std::string ProtobufAnnotate(const semmap::SemanticMapper& mapper, const std::string& input,
                             const AnnotateOptions& options) {
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(ReadBytes(input)));
  const semmap::NamespacePlan namespaces = semmap::PlanNamespaces(mapper, options);
  const semmap::ScopedNamePlan names = semmap::PlanScopedNames(mapper, options);
  NodeId next = 0;
  auto edit = [&](onnx::NodeProto* node) {
    REQUIRE(static_cast<std::size_t>(next) < mapper.graph().size());
    const semmap::Mapping& m = mapper.moduleFor(next);
    const std::string& ns = namespaces.values[next];
    MetadataAccess meta(node);
    meta.Drop([&](const std::string& key) {
      return absl::StartsWith(key, "semmap.") || absl::EndsWith(key, "@semmap") ||
             (!ns.empty() && key == "namespace");
    });
    if (!ns.empty()) meta.Add("namespace", ns);
    meta.Add("module@semmap", std::string(m.module_path));
    meta.Add("class@semmap", std::string(m.qualified_class));
    meta.Add("confidence@semmap", absl::StrCat(m.confidence));
    meta.Add("strategy@semmap", std::string(semmap::StrategyName(m.strategy)));
    if (!m.category.empty()) meta.Add("category@semmap", std::string(m.category));
    if (options.doc_string_json) {
      const nlohmann::json doc = {{"semmap",
                                   {{"module", std::string(m.module_path)},
                                    {"class", std::string(m.qualified_class)},
                                    {"confidence", m.confidence},
                                    {"strategy", std::string(semmap::StrategyName(m.strategy))}}}};
      node->set_doc_string(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    if (options.scoped_names && !names.names[next].empty()) node->set_name(names.names[next]);
    ++next;
  };
  VisitGraph(model.mutable_graph(), edit);
  for (onnx::FunctionProto& fn : *model.mutable_functions()) {
    for (onnx::NodeProto& node : *fn.mutable_node()) VisitNode(&node, edit);
  }
  REQUIRE(static_cast<std::size_t>(next) == mapper.graph().size());
  return model.SerializeAsString();
}

// Protobuf's serialization of the message `bytes` parse to: equal for two
// files exactly when they parse to equal messages (field for field, unknown
// fields and their order included; onnx has no map fields).
std::string Reserialized(const std::string& bytes) {
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(bytes));
  return model.SerializeAsString();
}

struct Mapped {
  std::optional<Graph> graph;
  std::optional<semmap::Manifest> manifest;
  std::optional<semmap::SemanticMapper> mapper;
};

std::unique_ptr<Mapped> MapFile(const std::string& path, const std::string& manifest_path = "") {
  auto m = std::make_unique<Mapped>();
  auto g = Graph::Load(path);
  REQUIRE(g.ok());
  m->graph.emplace(*std::move(g));
  if (!manifest_path.empty()) {
    auto man = semmap::Manifest::Load(manifest_path);
    REQUIRE(man.ok());
    m->manifest.emplace(*std::move(man));
  }
  auto mapper = semmap::SemanticMapper::Create(*m->graph, m->manifest ? &*m->manifest : nullptr);
  REQUIRE(mapper.ok());
  m->mapper.emplace(*std::move(mapper));
  return m;
}

// Annotates `input` both ways and checks they agree; returns the output.
std::string CheckAgainstProtobuf(const semmap::SemanticMapper& mapper, const std::string& input,
                                 const AnnotateOptions& options, const TempDir& tmp) {
  const std::string out = tmp.file("wire.onnx");
  auto result = semmap::Annotate(mapper, input, out, options);
  REQUIRE(result.ok());
  const std::string wire = ReadBytes(out);
  CHECK(result->bytes_written == wire.size());
  const std::string reference = ProtobufAnnotate(mapper, input, options);
  CHECK(Reserialized(wire) == reference);
  // Annotating the output again gives the same bytes (renamed nodes are
  // no longer the mapped graph's: a renamed file is mapped afresh).
  if (!options.scoped_names) {
    const std::string again = tmp.file("again.onnx");
    REQUIRE(semmap::Annotate(mapper, out, again, options).ok());
    CHECK(ReadBytes(again) == wire);
  }
  return wire;
}

onnx::AttributeProto* AddGraphAttribute(onnx::NodeProto* node, const std::string& name) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  return a;
}

void AddEntry(onnx::NodeProto* node, const std::string& key, const std::string& value) {
  MetadataAccess(node).Add(key, value);
}

// A model using every place a node can live: If and Loop bodies (GRAPH),
// a GRAPHS attribute, a model-local function; an external initializer;
// nodes with stale entries of semmap (both spellings), other entries, a doc_string, no name.
onnx::ModelProto EveryPlaceModel() {
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  g->add_input()->set_name("x");
  g->add_output()->set_name("z");
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("enc.fc.weight");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  onnx::TensorProto* b = g->add_initializer();
  b->set_name("enc.fc.bias");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(4);
  b->set_raw_data(std::string(16, '\x01'));

  onnx::NodeProto* mm = semmap_test::AddNode(g, "/enc/fc/MatMul", "MatMul", {"x", "enc.fc.weight"}, {"a"});
  mm->set_doc_string("exporter's doc");
  AddEntry(mm, "semmap.module", "stale");  // as earlier versions wrote it
  AddEntry(mm, "exporter.key", "kept");
  AddEntry(mm, "class@semmap", "stale too");
  onnx::NodeProto* cond = semmap_test::AddNode(g, "/enc/If", "If", {"c"}, {"y"});
  // Two body nodes named by the dynamo exporter's metadata only: mapped
  // exactly with the manifest, they get scoped names.
  onnx::NodeProto* neg = semmap_test::AddNode(AddGraphAttribute(cond, "then_branch")->mutable_g(),
                                              "node_neg", "Neg", {"a"}, {"y"});
  AddEntry(neg, "pkg.torch.onnx.name_scopes", "['', 'enc', 'enc.then', 'neg']");
  onnx::GraphProto* else_g = AddGraphAttribute(cond, "else_branch")->mutable_g();
  onnx::NodeProto* loop = semmap_test::AddNode(else_g, "/dec/Loop", "Loop", {"n", "c"}, {"y"});
  onnx::GraphProto* body = AddGraphAttribute(loop, "body")->mutable_g();
  onnx::NodeProto* unnamed = semmap_test::AddNode(body, "", "Abs", {"a"}, {"y"});
  AddEntry(unnamed, "namespace", "old/namespace");
  AddEntry(unnamed, "pkg.torch.onnx.name_scopes", "['', 'dec', 'abs']");
  onnx::NodeProto* multi = semmap_test::AddNode(g, "/dec/Multi", "Custom", {"y"}, {"m"});
  multi->set_domain("custom.domain");
  onnx::AttributeProto* branches = multi->add_attribute();
  branches->set_name("branches");
  branches->set_type(onnx::AttributeProto::GRAPHS);
  semmap_test::AddNode(branches->add_graphs(), "/dec/b0/Relu", "Relu", {"m"}, {"m0"});
  semmap_test::AddNode(branches->add_graphs(), "/dec/b1/Tanh", "Tanh", {"m"}, {"m1"});
  semmap_test::AddNode(g, "/dec/Add", "Add", {"m", "enc.fc.bias"}, {"z"});

  onnx::FunctionProto* fn = model.add_functions();
  fn->set_name("Gelu");
  fn->set_domain("local");
  fn->add_input("u");
  fn->add_output("v");
  onnx::NodeProto* erf = fn->add_node();
  erf->set_name("fn/Erf");
  erf->set_op_type("Erf");
  erf->add_input("u");
  erf->add_output("e");
  onnx::NodeProto* mul = fn->add_node();
  mul->set_name("fn/Mul");
  mul->set_op_type("Mul");
  mul->add_input("e");
  mul->add_input("u");
  mul->add_output("v");
  return model;
}

}  // namespace

TEST_CASE("Wire-level annotate equals protobuf's serialization of the same edits on real exports",
          "[annotate][wire][fixture]") {
  const std::string dir = GENERATE(std::string("bert-seqcls.torchscript"),
                                   std::string("bert-seqcls.dynamo"),
                                   std::string("t5-seq2seq-lm.dynamo"),
                                   std::string("bart-seq2seq-lm.optimum.optimum-merged"));
  CAPTURE(dir);
  auto f = semmap_test::LoadMapped(dir);
  TempDir tmp;
  AnnotateOptions options;
  SECTION("defaults") {}
  SECTION("overwrite namespaces, doc strings, scoped names") {
    options.overwrite_namespace = true;
    options.doc_string_json = true;
    options.scoped_names = true;
  }
  SECTION("no namespace") { options.write_namespace = false; }
  const std::string wire = CheckAgainstProtobuf(*f->mapper, f->model_path(), options, tmp);
  // Every initializer's bytes are in the output unchanged and in order.
  const std::string input = ReadBytes(f->model_path());
  onnx::ModelProto parsed;
  REQUIRE(parsed.ParseFromString(input));
  std::size_t from = 0;
  for (const onnx::TensorProto& t : parsed.graph().initializer()) {
    const std::string bytes = t.SerializeAsString();
    if (input.find(bytes) == std::string::npos) continue;  // not canonical in the input
    const std::size_t at = wire.find(bytes, from);
    REQUIRE(at != std::string::npos);
    from = at + bytes.size();
  }
}

TEST_CASE("Wire-level annotate handles subgraphs, GRAPHS, functions and external data",
          "[annotate][wire]") {
  TempDir tmp;
  const std::string input = tmp.file("model.onnx");
  const onnx::ModelProto model = EveryPlaceModel();
  SECTION("protobuf's field order") { WriteBytes(input, semmap_test::Serialize(model)); }
  SECTION("functions before the graph in the file") {
    // Two serialized messages concatenated parse as one (protobuf merges):
    // the function's nodes come first in bytes, last in Graph's order.
    onnx::ModelProto functions_only;
    *functions_only.mutable_functions() = model.functions();
    onnx::ModelProto rest = model;
    rest.clear_functions();
    WriteBytes(input, semmap_test::Serialize(functions_only) + semmap_test::Serialize(rest));
  }
  const std::string manifest = tmp.file("manifest.json");
  WriteBytes(manifest, semmap_test::ManifestJson({"enc", "enc.fc", "enc.then", "dec", "dec.b0",
                                                  "dec.b1"}));
  auto m = MapFile(input, manifest);
  REQUIRE(m->graph->size() == 11);
  AnnotateOptions options;
  options.doc_string_json = true;
  options.scoped_names = true;
  const std::string wire = CheckAgainstProtobuf(*m->mapper, input, options, tmp);
  auto result = semmap::Annotate(*m->mapper, input, tmp.file("out.onnx"), options);
  REQUIRE(result.ok());
  CHECK(result->nodes == 11);
  CHECK(result->renamed == 2);  // the two body nodes
  CHECK(result->external_tensors == 1);

  auto annotated = Graph::Load(tmp.file("out.onnx"));
  REQUIRE(annotated.ok());
  REQUIRE(annotated->size() == m->graph->size());
  for (std::size_t i = 0; i < annotated->size(); ++i) {
    const semmap::Node& n = annotated->node(static_cast<NodeId>(i));
    CAPTURE(i, n.name);
    std::map<std::string, std::string> meta;
    for (const auto& [key, value] : n.metadata) CHECK(meta.emplace(key, value).second);
    CHECK(meta.at("module@semmap") == m->mapper->moduleFor(static_cast<NodeId>(i)).module_path);
    CHECK(absl::StartsWith(n.doc_string, "{\"semmap\":"));
  }
  // The stale entries are gone, the exporter's stays; the external
  // reference and the raw payload are unchanged.
  const semmap::Node& mm = annotated->node(0);
  std::size_t modules = 0, classes = 0;
  for (const auto& [key, value] : mm.metadata) {
    CHECK_FALSE(absl::StartsWith(key, "semmap."));
    modules += key == "module@semmap" ? 1 : 0;
    classes += key == "class@semmap" ? 1 : 0;
  }
  CHECK(modules == 1);
  CHECK(classes == 1);
  CHECK(absl::StrContains(wire, "weights.bin"));
  CHECK(absl::StrContains(wire, std::string(16, '\x01')));
  CHECK(annotated->initializer("enc.fc.weight")->external);
}

TEST_CASE("The wire writer splices edits and keeps every other byte", "[annotate][wire]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  onnx::GraphProto* g = model.mutable_graph();
  onnx::TensorProto* t = g->add_initializer();
  t->set_name("w");
  t->set_raw_data(std::string(1000, '\x07'));
  semmap_test::AddNode(g, "a", "Relu", {"x"}, {"y"});
  semmap_test::AddNode(g, "b", "Relu", {"y"}, {"z"});
  const std::string input = semmap_test::Serialize(model);

  std::vector<std::string> seen;
  const semmap::internal::NodeEditor editor = [&](const semmap::internal::NodeView& node,
                                                  semmap::internal::NodeEdit* edit) {
    seen.push_back(std::string(node.name));
    edit->add_metadata.emplace_back("k", std::string(200, 'v'));  // the node's length grows a byte
    return absl::OkStatus();
  };
  auto rewrite = semmap::internal::ModelRewrite::Plan(input, "m.onnx", editor, 64);
  REQUIRE(rewrite.ok());
  CHECK(seen == std::vector<std::string>{"a", "b"});
  const std::string out = rewrite->ToString();
  CHECK(out.size() == rewrite->size());
  // Everything before the graph's length prefix is copied verbatim.
  const std::size_t graph_tag = input.find('\x3a');  // ModelProto.graph, field 7
  REQUIRE(graph_tag != std::string::npos);
  CHECK(out.substr(0, graph_tag + 1) == input.substr(0, graph_tag + 1));
  onnx::ModelProto parsed;
  REQUIRE(parsed.ParseFromString(out));
  onnx::ModelProto expected = model;
  for (onnx::NodeProto& n : *expected.mutable_graph()->mutable_node()) {
    AddEntry(&n, "k", std::string(200, 'v'));
  }
  CHECK(parsed.SerializeAsString() == expected.SerializeAsString());
  // The payload went through untouched and appears once.
  CHECK(out.find(std::string(1000, '\x07')) != std::string::npos);

  SECTION("an editor's error stops the rewrite unchanged") {
    const semmap::internal::NodeEditor refuse = [](const semmap::internal::NodeView& node,
                                                   semmap::internal::NodeEdit*) {
      return absl::FailedPreconditionError(absl::StrCat("node ", node.index));
    };
    auto r = semmap::internal::ModelRewrite::Plan(input, "m.onnx", refuse, 64);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(r.status().message() == "node 0");
  }
  SECTION("malformed input names the file and the byte offset") {
    for (std::size_t cut : {input.size() - 1, input.size() / 2, std::size_t{3}}) {
      CAPTURE(cut);
      auto r = semmap::internal::ModelRewrite::Plan(input.substr(0, cut), "m.onnx", editor, 64);
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
      CHECK(absl::StartsWith(r.status().message(), "m.onnx: "));
      const bool names_place = absl::StrContains(r.status().message(), "byte offset") ||
                               absl::StrContains(r.status().message(), "no graph");
      CHECK(names_place);
    }
  }
  SECTION("nesting deeper than the limit is refused") {
    onnx::GraphProto* innermost = nullptr;
    onnx::ModelProto deep = semmap_test::MakeNestedIfModel(5, &innermost);
    semmap_test::AddNode(innermost, "/inner/Relu", "Relu", {"x"}, {"y"});
    const std::string bytes = semmap_test::Serialize(deep);
    CHECK(semmap::internal::ModelRewrite::Plan(bytes, "d.onnx", editor, 5).ok());
    auto r = semmap::internal::ModelRewrite::Plan(bytes, "d.onnx", editor, 4);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(r.status().message(), "nested deeper than 4"));
  }
}

TEST_CASE("Annotate reads a truncated input as an error naming the offset", "[annotate][wire]") {
  auto f = semmap_test::LoadMapped("bert-seqcls.torchscript");
  TempDir tmp;
  const std::string input = tmp.file("model.onnx");
  const std::string bytes = ReadBytes(f->model_path());
  WriteBytes(input, bytes.substr(0, bytes.size() / 2));
  auto r = semmap::Annotate(*f->mapper, input, tmp.file("out.onnx"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StartsWith(r.status().message(), input + ": not a valid ONNX model: byte offset "));
  CHECK_FALSE(std::ifstream(tmp.file("out.onnx")).good());
}
