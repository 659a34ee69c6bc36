#include <unistd.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
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
    REQUIRE(out.count(std::string(key)) == 0);  // no duplicate keys after annotating
    out[std::string(key)] = std::string(value);
  }
  return out;
}

// The part of an old name a scoped name keeps: all of it, '%' and '/'
// escaped (the op type when empty).
std::string LeafOfForTest(const semmap::Node& n) {
  if (n.name.empty()) return std::string(n.op_type);
  return absl::StrReplaceAll(n.name, {{"%", "%25"}, {"/", "%2F"}});
}

}  // namespace

TEST_CASE("Annotated models carry each node's mapping and nothing else changes",
          "[annotate][fixture]") {
  const std::string dir = GENERATE(std::string("bert-seqcls.torchscript"),
                                   std::string("t5-seq2seq-lm.torchscript"),
                                   std::string("gpt2-causal-lm.optimum.optimum-with-past"),
                                   std::string("torch-2.15/tv-resnet18.torchscript"));
  CAPTURE(dir);
  auto f = LoadMapped(dir);
  std::size_t fused = 0;
  TempDir tmp;
  const std::string out = tmp.file("annotated.onnx");
  auto result = Annotate(*f->mapper, f->model_path(), out);
  REQUIRE(result.ok());
  CHECK(result->nodes == f->graph->size());
  const semmap::NamespacePlan namespaces = semmap::PlanNamespaces(*f->mapper, {});
  CHECK(namespaces.written == f->mapper->mappedCount());
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
    REQUIRE(meta.count("module@semmap") == 1);
    CHECK(meta.at("module@semmap") == m.module_path);
    CHECK(meta.at("class@semmap") == m.qualified_class);
    CHECK(meta.at("strategy@semmap") == semmap::StrategyName(m.strategy));
    CHECK(std::stod(meta.at("confidence@semmap")) == Approx(m.confidence));
    CHECK(meta.count("category@semmap") == (m.category.empty() ? 0 : 1));
    if (m.mapped()) CHECK(meta.at("namespace") == namespaces.values[i]);
    // A fused node's origins, as a JSON list of paths.
    const std::vector<absl::string_view> origins =
        f->mapper->originPathsOf(static_cast<semmap::NodeId>(i));
    REQUIRE(meta.count("origins@semmap") == (origins.empty() ? 0 : 1));
    if (!origins.empty()) {
      ++fused;
      const nlohmann::json listed = nlohmann::json::parse(meta.at("origins@semmap"));
      REQUIRE(listed.size() == origins.size());
      for (std::size_t k = 0; k < origins.size(); ++k) CHECK(listed[k] == std::string(origins[k]));
    }
  }
  // ResNet-18's 20 Convs with a BatchNorm folded in; no fusion elsewhere.
  CHECK(fused == (dir == "torch-2.15/tv-resnet18.torchscript" ? 20u : 0u));
  std::vector<std::string> names_before, names_after;
  for (const auto& t : f->graph->initializers()) names_before.emplace_back(t.name);
  for (const auto& t : annotated->initializers()) names_after.emplace_back(t.name);
  CHECK(names_after == names_before);
  CHECK(annotated->inputs() == f->graph->inputs());
  CHECK(annotated->outputs() == f->graph->outputs());
  CHECK(annotated->opset() == f->graph->opset());

  // Annotating the annotated file again gives the same bytes.
  const std::string again = tmp.file("again.onnx");
  REQUIRE(Annotate(*f->mapper, out, again).ok());
  CHECK(ReadBytes(again) == ReadBytes(out));
}

TEST_CASE("The namespace names one level per called module, compactly", "[annotate][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  const semmap::NodeId id = f->graph->find("/bert/encoder/layer.0/attention/self/query/MatMul");
  REQUIRE(id != semmap::kNoNode);
  const semmap::NamespacePlan plan = semmap::PlanNamespaces(*f->mapper, {});
  CHECK_FALSE(plan.exporter_spelling);
  // No level for the ModuleList (never called), none for the op itself.
  CHECK(plan.values[id] ==
        ": BertForSequenceClassification/bert: BertModel/encoder: BertEncoder"
        "/layer.0: BertLayer/attention: BertAttention/self: BertSdpaSelfAttention"
        "/query: Linear");
}

TEST_CASE("Without a manifest the namespace is the scope itself", "[annotate][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript", /*with_manifest=*/false);
  const semmap::NodeId id = f->graph->find("/bert/encoder/layer.0/attention/self/query/MatMul");
  REQUIRE(id != semmap::kNoNode);
  CHECK(semmap::PlanNamespaces(*f->mapper, {}).values[id] ==
        "bert/encoder/layer.0/attention/self/query");
}

TEST_CASE("Next to the exporter's namespaces, semmap spells levels as the exporter does",
          "[annotate][fixture]") {
  auto f = LoadMapped("t5-seq2seq-lm.dynamo");
  const semmap::NamespacePlan plan = semmap::PlanNamespaces(*f->mapper, {});
  REQUIRE(plan.exporter_spelling);
  REQUIRE(plan.written > 0);
  // Every level semmap writes is a level of some exporter namespace of the
  // file, or a module the exporter shows nowhere.
  std::set<std::string> exporter_levels;
  for (const semmap::Node& n : f->graph->nodes()) {
    const auto meta = MetadataOf(n);
    auto it = meta.find("namespace");
    if (it == meta.end()) continue;
    std::vector<std::string> parts = absl::StrSplit(it->second, '/');
    parts.pop_back();
    std::string prefix;
    for (const std::string& p : parts) {
      prefix += (prefix.empty() ? "" : "/") + p;
      exporter_levels.insert(prefix);
    }
  }
  std::size_t checked = 0;
  for (std::size_t i = 0; i < plan.values.size(); ++i) {
    if (plan.values[i].empty()) continue;
    CAPTURE(f->graph->node(static_cast<semmap::NodeId>(i)).name, plan.values[i]);
    CHECK(absl::StrContains(plan.values[i], "encoder.block: ") == false);
    const std::vector<std::string> parts = absl::StrSplit(plan.values[i], '/');
    std::string prefix;
    for (const std::string& p : parts) {
      prefix += (prefix.empty() ? "" : "/") + p;
      if (exporter_levels.count(prefix)) ++checked;
    }
  }
  CHECK(checked > 0);
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
  // All but the exporter's empty-stack markers, which name no module.
  CHECK(kept->namespaces_kept > 0);
  CHECK(kept->namespaces_kept <= with_namespace);
  auto kept_graph = Graph::Load(tmp.file("kept.onnx"));
  REQUIRE(kept_graph.ok());
  for (std::size_t i = 0; i < kept_graph->size(); ++i) {
    const auto before = MetadataOf(f->graph->node(static_cast<semmap::NodeId>(i)));
    const auto after = MetadataOf(kept_graph->node(static_cast<semmap::NodeId>(i)));
    const bool marker = before.count("namespace") &&
                        absl::StartsWith(before.at("namespace"), "_empty_nn_module_stack");
    if (before.count("namespace") && !marker) {
      CHECK(after.at("namespace") == before.at("namespace"));
    }
    // The exporter's other entries survive too.
    for (const auto& [key, value] : before) {
      if (key != "namespace") CHECK(after.at(key) == value);
    }
  }

  AnnotateOptions overwrite;
  overwrite.overwrite_namespace = true;
  auto replaced = Annotate(*f->mapper, f->model_path(), tmp.file("replaced.onnx"), overwrite);
  REQUIRE(replaced.ok());
  CHECK(replaced->namespaces_kept == 0);
  const semmap::NamespacePlan replaced_plan = semmap::PlanNamespaces(*f->mapper, overwrite);
  auto replaced_graph = Graph::Load(tmp.file("replaced.onnx"));
  REQUIRE(replaced_graph.ok());
  for (std::size_t i = 0; i < replaced_graph->size(); ++i) {
    const auto meta = MetadataOf(replaced_graph->node(static_cast<semmap::NodeId>(i)));
    if (f->mapper->moduleFor(static_cast<semmap::NodeId>(i)).mapped()) {
      CHECK(meta.at("namespace") == replaced_plan.values[i]);
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
    CHECK(MetadataOf(n).at("module@semmap") ==
          mapper->moduleFor(static_cast<semmap::NodeId>(i)).module_path);
  }
  CHECK(MetadataOf(out->node(out->find("/dec/else/Abs"))).at("module@semmap") == "dec.else");
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
    CHECK(MetadataOf(g->node(0)).count("module@semmap") == 1);
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

namespace {

void AddMetadataEntry(onnx::NodeProto* node, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto entry;
  entry.set_key(key);
  entry.set_value(value);
  node->GetReflection()->MutableUnknownFields(node)->AddLengthDelimited(
      9, entry.SerializeAsString());
}

// A dynamo-style node: no scope in its name, the module stack in metadata.
onnx::NodeProto* AddStackNode(onnx::GraphProto* g, const std::string& name, const std::string& op,
                              std::initializer_list<std::string> inputs,
                              std::initializer_list<std::string> outputs,
                              const std::string& stack) {
  onnx::NodeProto* n = semmap_test::AddNode(g, name, op, inputs, outputs);
  AddMetadataEntry(n, "pkg.torch.onnx.name_scopes", stack);
  return n;
}

// A model, its manifest and the mapper over both, for renaming cases.
struct Planned {
  TempDir tmp;
  std::optional<Graph> graph;
  std::optional<semmap::Manifest> manifest;
  std::optional<semmap::SemanticMapper> mapper;
  std::string model_path;

  Planned(const onnx::ModelProto& model, const std::vector<std::string>& modules,
          bool with_manifest = true) {
    model_path = tmp.file("in.onnx");
    WriteBytes(model_path, semmap_test::Serialize(model));
    auto g = Graph::Load(model_path);
    REQUIRE(g.ok());
    graph.emplace(*std::move(g));
    if (with_manifest) {
      auto m = semmap::Manifest::Parse(semmap_test::ManifestJson(modules), "test manifest");
      REQUIRE(m.ok());
      manifest.emplace(*std::move(m));
    }
    auto mp = semmap::SemanticMapper::Create(*graph, manifest ? &*manifest : nullptr);
    REQUIRE(mp.ok());
    mapper.emplace(*std::move(mp));
  }
  const std::string& newName(const semmap::ScopedNamePlan& plan, const std::string& old) const {
    const semmap::NodeId id = graph->find(old);
    REQUIRE(id != semmap::kNoNode);
    return plan.names[static_cast<std::size_t>(id)];
  }
};

AnnotateOptions ScopedOptions(double floor = 0.9) {
  AnnotateOptions options;
  options.scoped_names = true;
  options.scoped_name_min_confidence = floor;
  return options;
}

}  // namespace

TEST_CASE("Scoped names follow the TorchScript convention and keep the last part",
          "[annotate][scoped]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  AddStackNode(g, "node_linear_4", "MatMul", {"x", "encoder.layer.0.query.weight"}, {"q"},
               "['', 'encoder', 'encoder.layer.0', 'encoder.layer.0.query', 'linear_4']");
  AddStackNode(g, "node_add_1", "Add", {"q", "x"}, {"y"}, "['', 'add_1']");
  AddStackNode(g, "node_relu", "Relu", {"y"}, {"z"},
               "['', 'encoder', 'encoder.layer.0', 'encoder.layer.0.act', 'relu']");
  Planned p(model, {"encoder", "encoder.layer", "encoder.layer.0", "encoder.layer.0.query",
                    "encoder.layer.0.act"});
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*p.mapper, ScopedOptions());
  const semmap::Mapping& root_op = p.mapper->moduleFor(p.graph->find("node_add_1"));
  CAPTURE(root_op.module_path, root_op.confidence, root_op.evidence);
  CHECK(p.newName(plan, "node_linear_4") == "/encoder/layer.0/query/node_linear_4");
  // The root module's own ops: the root scope.
  CHECK(p.newName(plan, "node_add_1") == "/node_add_1");
  CHECK(p.newName(plan, "node_relu") == "/encoder/layer.0/act/node_relu");
  CHECK(plan.renamed == 3);
  CHECK(plan.kept == 0);
  // The new name is what the mapper reads: ScopePath gives the module's scope.
  const semmap::ScopePath path = semmap::ScopePath::Parse(p.newName(plan, "node_linear_4"));
  CHECK(path.DottedPath() == "encoder.layer.0.query");
  CHECK(path.leaf() == "node_linear_4");
}

TEST_CASE("Scoped names: the floor decides which nodes are renamed", "[annotate][scoped]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  AddStackNode(g, "node_linear", "MatMul", {"x", "w"}, {"a"},
               "['', 'block', 'block.proj', 'linear']");
  // No scope, no metadata: found from its neighbours, with low confidence.
  semmap_test::AddNode(g, "node_guess", "Tanh", {"a"}, {"b"});
  AddStackNode(g, "node_relu", "Relu", {"b"}, {"c"}, "['', 'block', 'block.act', 'relu']");
  Planned p(model, {"block", "block.proj", "block.act"});
  const semmap::Mapping& guess = p.mapper->moduleFor(p.graph->find("node_guess"));
  REQUIRE(guess.mapped());
  REQUIRE(guess.confidence < 0.9);

  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*p.mapper, ScopedOptions());
  CHECK(p.newName(plan, "node_linear") == "/block/proj/node_linear");
  CHECK(p.newName(plan, "node_guess").empty());
  CHECK(plan.below_floor == 1);

  // A floor above 1 renames nothing; one below the confident floor still
  // leaves the guess alone (next case).
  const semmap::ScopedNamePlan none = semmap::PlanScopedNames(*p.mapper, ScopedOptions(1.01));
  CHECK(none.renamed == 0);
  CHECK(none.below_floor == p.graph->size());
  CHECK(p.newName(semmap::PlanScopedNames(*p.mapper, ScopedOptions(guess.confidence)),
                  "node_guess").empty());

  // Without a manifest confidences are at most 0.8: nothing is renamed.
  Planned bare(model, {}, /*with_manifest=*/false);
  CHECK(semmap::PlanScopedNames(*bare.mapper, ScopedOptions()).renamed == 0);
  CHECK(semmap::PlanScopedNames(*bare.mapper, ScopedOptions(0.0)).renamed == 0);
}

TEST_CASE("Scoped names never launder confidence: nothing below the confident floor is renamed",
          "[annotate][scoped]") {
  // A renamed node reads back as an exact scope at confidence 1: a guess
  // renamed at a lower floor would come back as a certainty.
  auto f = LoadMapped("bert-seqcls.dynamo");
  std::size_t guesses = 0;
  for (const semmap::Mapping& m : f->mapper->mapAll()) guesses += m.mapped() && !m.confident();
  REQUIRE(guesses > 0);
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*f->mapper, ScopedOptions(0.0));
  CHECK(plan.renamed > 0);
  for (std::size_t i = 0; i < plan.names.size(); ++i) {
    const semmap::Mapping m = f->mapper->moduleFor(static_cast<semmap::NodeId>(i));
    CAPTURE(f->graph->node(static_cast<semmap::NodeId>(i)).name, m.confidence);
    if (!m.confident()) CHECK(plan.names[i].empty());
  }
  CHECK(plan.below_floor >= guesses);
  CHECK(plan.renamed == semmap::PlanScopedNames(*f->mapper, ScopedOptions()).renamed);

  // Annotate refuses such a floor (before writing anything).
  TempDir tmp;
  for (const double floor : {0.0, 0.7, 0.89}) {
    CAPTURE(floor);
    auto r = Annotate(*f->mapper, f->model_path(), tmp.file("out.onnx"), ScopedOptions(floor));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(r.status().message(), "confidence 1"));
    CHECK_FALSE(std::ifstream(tmp.file("out.onnx")).good());
  }
  CHECK(Annotate(*f->mapper, f->model_path(), tmp.file("out.onnx"), ScopedOptions(1.0)).ok());
}

TEST_CASE("Scoped names never grow a name past the loader's limit", "[annotate][scoped]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  // 4 bytes under the limit: "/block/proj/" in front would push it over.
  const std::string long_name(semmap::GraphOptions().max_name_bytes - 4, 'n');
  AddStackNode(model.mutable_graph(), long_name, "MatMul", {"x", "w"}, {"a"},
               "['', 'block', 'block.proj', 'linear']");
  AddStackNode(model.mutable_graph(), "node_relu", "Relu", {"a"}, {"b"},
               "['', 'block', 'block.act', 'relu']");
  Planned p(model, {"block", "block.proj", "block.act"});
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*p.mapper, ScopedOptions());
  CHECK(p.newName(plan, long_name).empty());
  CHECK(p.newName(plan, "node_relu") == "/block/act/node_relu");
  CHECK(plan.not_expressible == 1);

  semmap::AnnotateOptions options = ScopedOptions();
  const std::string out = p.tmp.file("out.onnx");
  REQUIRE(semmap::Annotate(*p.mapper, p.model_path, out, options).ok());
  auto back = Graph::Load(out);
  REQUIRE(back.ok());
  CHECK(back->find(long_name) != semmap::kNoNode);
}

TEST_CASE("Scoped names leave scoped names, inputs, outputs and values alone",
          "[annotate][scoped]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  g->add_input()->set_name("x");
  g->add_output()->set_name("z");
  semmap_test::AddNode(g, "/enc/layer.0/fc/MatMul", "MatMul", {"x", "w"}, {"a"});
  AddStackNode(g, "node_gelu", "Gelu", {"a"}, {"b"}, "['', 'enc', 'enc.layer.0', 'enc.layer.0.act', 'gelu']");
  AddStackNode(g, "node_add", "Add", {"b", "x"}, {"z"}, "['', 'enc', 'add']");
  Planned p(model, {"enc", "enc.layer", "enc.layer.0", "enc.layer.0.fc", "enc.layer.0.act"});
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*p.mapper, ScopedOptions());
  CHECK(p.newName(plan, "/enc/layer.0/fc/MatMul").empty());
  CHECK(plan.kept == 1);
  CHECK(plan.renamed == 2);

  const std::string out = p.tmp.file("out.onnx");
  auto result = Annotate(*p.mapper, p.model_path, out, ScopedOptions());
  REQUIRE(result.ok());
  CHECK(result->renamed == 2);
  CHECK(result->scoped_kept == 1);
  auto annotated = Graph::Load(out);
  REQUIRE(annotated.ok());
  CHECK(annotated->inputs() == p.graph->inputs());
  CHECK(annotated->outputs() == p.graph->outputs());
  for (std::size_t i = 0; i < annotated->size(); ++i) {
    const semmap::NodeId id = static_cast<semmap::NodeId>(i);
    CHECK(annotated->node(id).inputs == p.graph->node(id).inputs);
    CHECK(annotated->node(id).outputs == p.graph->node(id).outputs);
  }
  CHECK(annotated->node(0).name == "/enc/layer.0/fc/MatMul");
  CHECK(annotated->node(1).name == "/enc/layer.0/act/node_gelu");
  CHECK(annotated->node(2).name == "/enc/node_add");

  // Without the option, no node is renamed.
  REQUIRE(Annotate(*p.mapper, p.model_path, p.tmp.file("plain.onnx")).ok());
  auto plain = Graph::Load(p.tmp.file("plain.onnx"));
  REQUIRE(plain.ok());
  for (std::size_t i = 0; i < plain->size(); ++i) {
    CHECK(plain->node(static_cast<semmap::NodeId>(i)).name ==
          p.graph->node(static_cast<semmap::NodeId>(i)).name);
  }
}

TEST_CASE("Scoped names are unique among old and new names", "[annotate][scoped]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  const std::string stack = "['', 'enc', 'enc.fc', 'linear']";
  // Two nodes with one name, two without a name, and an existing node that
  // already holds the name the second would get.
  AddStackNode(g, "node_linear", "MatMul", {"x"}, {"a"}, stack);
  AddStackNode(g, "node_linear", "MatMul", {"a"}, {"b"}, stack);
  AddStackNode(g, "", "Relu", {"b"}, {"c"}, stack);
  AddStackNode(g, "", "Relu", {"c"}, {"d"}, stack);
  semmap_test::AddNode(g, "/enc/fc/node_linear_1", "Neg", {"d"}, {"e"});
  Planned p(model, {"enc", "enc.fc", "enc.other"});
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*p.mapper, ScopedOptions());
  REQUIRE(plan.names.size() == 5);
  CHECK(plan.names[0] == "/enc/fc/node_linear");
  CHECK(plan.names[1] == "/enc/fc/node_linear_2");  // _1 is taken by node 4's old name
  CHECK(plan.names[2] == "/enc/fc/Relu");
  CHECK(plan.names[3] == "/enc/fc/Relu_1");
  CHECK(plan.names[4].empty());  // already resolves to its module
  CHECK(plan.kept == 1);
  std::set<std::string> all;
  for (std::size_t i = 0; i < plan.names.size(); ++i) {
    const std::string name = plan.names[i].empty()
                                 ? std::string(p.graph->node(static_cast<semmap::NodeId>(i)).name)
                                 : plan.names[i];
    CHECK(all.insert(name).second);
  }
}

TEST_CASE("Hostile names and paths are never given a name that reads differently",
          "[annotate][scoped]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  // A name ending in '/', a derived (value-built) name, a name that is a
  // scope of another module, and a module path whose segments would join to
  // another path ("a.a.0" read without the manifest as "a.0").
  semmap_test::AddNode(g, "/x/y/", "Relu", {"i"}, {"a"});
  AddStackNode(g, "v_output_0_QuantizeLinear", "QuantizeLinear", {"a"}, {"b"},
               "['', 'enc', 'enc.fc', 'q']");
  semmap_test::AddNode(g, "/enc/Neg", "Neg", {"b"}, {"c"});
  AddStackNode(g, "node_tanh", "Tanh", {"c"}, {"d"}, "['', 'a', 'a.a', 'a.a.0', 'tanh']");
  AddStackNode(g, "node\nodd\xff", "Abs", {"d"}, {"e"}, "['', 'enc', 'enc.fc', 'abs']");
  Planned p(model, {"enc", "enc.fc", "a", "a.a", "a.a.0"});
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*p.mapper, ScopedOptions());
  // A scope that resolves to nothing: mapped from its neighbours, renamed
  // when that is confident enough, with its op type as the last part.
  const semmap::Mapping& inferred = p.mapper->moduleFor(p.graph->find("/x/y/"));
  REQUIRE(inferred.mapped());
  CHECK(p.newName(plan, "/x/y/").empty() == (inferred.confidence < 0.9));
  // "<value>_output_0_..." is not read as a scope, so it would not survive.
  CHECK(p.newName(plan, "v_output_0_QuantizeLinear").empty());
  CHECK(p.newName(plan, "/enc/Neg").empty());  // already resolves to its module
  CHECK(p.newName(plan, "node_tanh").empty());
  CHECK(p.newName(plan, "node\nodd\xff") == "/enc/fc/node\nodd\xff");
  CHECK(plan.not_expressible == 2);
  CHECK(plan.kept == 1);
}

TEST_CASE("Scoped names keep the whole old name", "[annotate][scoped]") {
  // Names with scopes of their own that resolve to nothing, mapped exactly
  // by the exporter's metadata: "a/b/c" became "/enc/fc/c", losing "a/b".
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  const std::string fc = "['', 'enc', 'enc.fc', 'linear']";
  AddStackNode(g, "a/b/c", "MatMul", {"x", "w"}, {"a"}, fc);
  AddStackNode(g, "x/y/", "Add", {"a", "b"}, {"c"}, fc);
  AddStackNode(g, "50%/d", "Relu", {"c"}, {"d"}, "['', 'enc', 'enc.act', 'relu']");
  Planned p(model, {"enc", "enc.fc", "enc.act"});
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*p.mapper, ScopedOptions());
  CHECK(p.newName(plan, "a/b/c") == "/enc/fc/a%2Fb%2Fc");
  CHECK(p.newName(plan, "x/y/") == "/enc/fc/x%2Fy%2F");
  CHECK(p.newName(plan, "50%/d") == "/enc/act/50%25%2Fd");
  CHECK(plan.renamed == 3);
  // The old name reads back from the new one.
  for (const char* old : {"a/b/c", "x/y/", "50%/d"}) {
    const semmap::ScopePath path = semmap::ScopePath::Parse(p.newName(plan, old));
    CHECK(absl::StrReplaceAll(path.leaf(), {{"%2F", "/"}, {"%25", "%"}}) == old);
  }
}

TEST_CASE("Scoped names under a wrapper binding carry the wrapper", "[annotate][scoped]") {
  // A task model's file ("/bert/...") against a base-model manifest: the
  // graph's scopes sit under an ONNX-only wrapper segment.
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  semmap_test::AddNode(g, "/bert/encoder/layer.0/fc/MatMul", "MatMul", {"x"}, {"a"});
  semmap_test::AddNode(g, "/bert/encoder/layer.0/fc/Add", "Add", {"a"}, {"b"});
  semmap_test::AddNode(g, "/bert/encoder/layer.0/act/Relu", "Relu", {"b"}, {"c"});
  semmap_test::AddNode(g, "Identity_3", "Identity", {"encoder.layer.0.fc.weight"}, {"w"});
  semmap_test::AddNode(g, "/bert/encoder/layer.0/fc/MatMul_1", "MatMul", {"c", "w"}, {"d"});
  AddStackNode(g, "node_gelu", "Gelu", {"d"}, {"e"},
               "['', 'bert', 'bert.encoder', 'bert.encoder.layer.0', 'bert.encoder.layer.0.act', "
               "'gelu']");
  Planned p(model, {"encoder", "encoder.layer", "encoder.layer.0", "encoder.layer.0.fc",
                    "encoder.layer.0.act"});
  REQUIRE(p.mapper->rootBinding().wrapper == std::vector<std::string>{"bert"});
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*p.mapper, ScopedOptions());
  CHECK(plan.kept == 4);
  // The dynamo-named node, mapped by its metadata, gets the wrapper too.
  const semmap::Mapping m = p.mapper->moduleFor(p.graph->find("node_gelu"));
  CAPTURE(m.confidence, m.evidence);
  REQUIRE(m.module_path == "encoder.layer.0.act");
  CHECK(p.newName(plan, "node_gelu") == "/bert/encoder/layer.0/act/node_gelu");
  // The Identity standing for a weight follows its consumer (0.85): a
  // guess, whatever the floor asked for.
  CHECK(p.mapper->moduleFor(p.graph->find("Identity_3")).module_path == "encoder.layer.0.fc");
  CHECK(p.newName(plan, "Identity_3").empty());
  CHECK(p.newName(semmap::PlanScopedNames(*p.mapper, ScopedOptions(0.0)), "Identity_3").empty());
}

TEST_CASE("Annotated with scoped names, real exports map back to the same modules",
          "[annotate][scoped][fixture]") {
  const std::string dir = GENERATE(std::string("bert-seqcls.dynamo"),
                                   std::string("vit-imgcls.dynamo"),
                                   std::string("convnext-imgcls.dynamo"),
                                   std::string("bert-seqcls.torchscript"),
                                   std::string("resnet-imgcls.torchscript"));
  CAPTURE(dir);
  auto f = LoadMapped(dir);
  TempDir tmp;
  const std::string out = tmp.file("scoped.onnx");
  auto result = Annotate(*f->mapper, f->model_path(), out, ScopedOptions());
  REQUIRE(result.ok());
  const semmap::ScopedNamePlan plan = semmap::PlanScopedNames(*f->mapper, ScopedOptions());
  CHECK(result->renamed == plan.renamed);
  if (dir.find(".dynamo") != std::string::npos) CHECK(result->renamed > 0);

  auto annotated = Graph::Load(out);
  REQUIRE(annotated.ok());
  REQUIRE(annotated->size() == f->graph->size());
  std::set<std::string> names;
  for (const semmap::Node& n : annotated->nodes()) CHECK(names.emplace(n.name).second);
  auto remapped = semmap::SemanticMapper::Create(*annotated, &*f->manifest);
  REQUIRE(remapped.ok());
  auto bare = semmap::SemanticMapper::Create(*annotated, nullptr);
  REQUIRE(bare.ok());
  std::size_t renamed = 0;
  for (std::size_t i = 0; i < annotated->size(); ++i) {
    const semmap::NodeId id = static_cast<semmap::NodeId>(i);
    const semmap::Mapping& before = f->mapper->moduleFor(id);
    CAPTURE(f->graph->node(id).name, annotated->node(id).name);
    if (plan.names[i].empty()) {
      CHECK(annotated->node(id).name == f->graph->node(id).name);
      continue;
    }
    ++renamed;
    CHECK(before.confidence >= 0.9);
    // Only the scope was added: the old name's last part ends the new one.
    const semmap::ScopePath path = semmap::ScopePath::Parse(annotated->node(id).name);
    CHECK(path.scoped());
    CHECK(absl::StartsWith(path.leaf(), LeafOfForTest(f->graph->node(id))));
    const semmap::Mapping& after = remapped->moduleFor(id);
    CHECK(after.module_path == before.module_path);
    CHECK(after.strategy == semmap::Strategy::kExactScope);
    CHECK(after.confidence == 1.0);
    if (f->mapper->rootBinding().wrapper.empty() && f->mapper->rootBinding().root == 0) {
      CHECK(bare->moduleFor(id).module_path == before.module_path);
    }
  }
  CHECK(renamed == plan.renamed);

  // Annotating the result again (mapped afresh) renames nothing more.
  auto again = semmap::SemanticMapper::Create(*annotated, &*f->manifest);
  REQUIRE(again.ok());
  CHECK(semmap::PlanScopedNames(*again, ScopedOptions()).renamed == 0);
}
