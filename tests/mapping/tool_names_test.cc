// Names that tools outside the exporter make: a parameter's name inside a
// longer one (a quantizer's "q_output_<parameter>_1"), a wrapper's prefix
// on every initializer, a wrapper attribute spelt otherwise where the
// manifest was written. Each is evidence of the parameter or the module it
// names, never against the manifest (docs/mapping.md, "Manifest fit").
// The graphs are real exports of the corpus with their names changed as
// such a tool changes them.
#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "base/text.h"
#include "catch2/catch.hpp"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "semmap/semmap.h"
#include "test_util.h"

namespace {

using semmap_test::Fixture;

onnx::ModelProto LoadProto(const std::string& dir) {
  std::ifstream in(Fixture(dir, "model.onnx"), std::ios::binary);
  REQUIRE(in.good());
  onnx::ModelProto model;
  REQUIRE(model.ParseFromIstream(&in));
  return model;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

semmap::Graph ParseGraph(const onnx::ModelProto& model) {
  auto g = semmap::Graph::Parse(semmap_test::Serialize(model), "test");
  REQUIRE(g.ok());
  return *std::move(g);
}

semmap::Manifest ParseManifest(const std::string& json) {
  auto m = semmap::Manifest::Parse(json, "manifest.json");
  REQUIRE(m.ok());
  return *std::move(m);
}

// Every initializer renamed by `rename`, its readers too.
template <typename Rename>
void RenameInitializers(onnx::ModelProto* model, Rename rename) {
  onnx::GraphProto* g = model->mutable_graph();
  std::map<std::string, std::string> renamed;
  for (onnx::TensorProto& t : *g->mutable_initializer()) {
    const std::string to = rename(t.name());
    renamed[t.name()] = to;
    t.set_name(to);
  }
  for (onnx::NodeProto& n : *g->mutable_node()) {
    for (std::string& input : *n.mutable_input()) {
      auto it = renamed.find(input);
      if (it != renamed.end()) input = it->second;
    }
  }
}

// Node names and metadata gone, as a tool that rebuilds the graph leaves
// them: only the initializers' names say anything.
void DropNodeNames(onnx::ModelProto* model) {
  for (onnx::NodeProto& n : *model->mutable_graph()->mutable_node()) {
    n.clear_name();
    // metadata_props (field 9): a known field from onnx 1.16 on, an
    // unknown one in older releases.
    constexpr int kMetadataProps = 9;
    const google::protobuf::FieldDescriptor* field =
        onnx::NodeProto::descriptor()->FindFieldByNumber(kMetadataProps);
    if (field != nullptr) {
      n.GetReflection()->ClearField(&n, field);
    } else {
      n.GetReflection()->MutableUnknownFields(&n)->DeleteByNumber(kMetadataProps);
    }
  }
}

// Node -> module path of a mapping, by position.
std::vector<std::string> Answers(const semmap::SemanticMapper& mapper) {
  std::vector<std::string> out;
  for (semmap::NodeId n = 0; n < static_cast<semmap::NodeId>(mapper.graph().size()); ++n) {
    const semmap::Mapping m = mapper.moduleFor(n);
    out.emplace_back(m.mapped() ? std::string(m.module_path) : std::string("-"));
  }
  return out;
}

std::size_t Same(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) same += a[i] == b[i];
  return same;
}

TEST_CASE("FindEmbeddedName finds a tensor's name inside a tool's") {
  const std::vector<std::string> known = {"model.embed_tokens.weight", "onnx::MatMul_12",
                                          "encoder.0.conv.weight", "enc.w"};
  const auto is_known = [&](absl::string_view part) {
    return std::find(known.begin(), known.end(), part) != known.end();
  };
  const auto any = [](absl::string_view) { return true; };
  using Row = std::tuple<std::string, std::string>;
  const auto [name, want] = GENERATE(table<std::string, std::string>({
      Row{"q_output_model.embed_tokens.weight_1", "model.embed_tokens.weight"},
      Row{"model.embed_tokens.weight_quantized", "model.embed_tokens.weight"},
      Row{"q_output_onnx::MatMul_12_1", "onnx::MatMul_12"},
      Row{"If_0_else_branch__Inline_0__encoder.0.conv.weight", "encoder.0.conv.weight"},
      Row{"x/encoder.0.conv.weight", "encoder.0.conv.weight"},
      // The name itself is not a part; a dotted prefix is a wrapper's,
      // which the root binding reads, not this search.
      Row{"model.embed_tokens.weight", ""},
      Row{"inner.encoder.0.conv.weight", ""},
      // Parts end before a separator only: "enc.weight" holds no "enc.w".
      Row{"q_enc.weight", ""},
      Row{"", ""},
  }));
  CAPTURE(name);
  CHECK(semmap::internal::FindEmbeddedName(name, any, is_known) == want);
}

TEST_CASE("FindEmbeddedName asks a bounded number of parts of any name") {
  std::string hostile;
  for (int i = 0; i < 10000; ++i) hostile += "a_";
  int asked = 0;
  const auto count = [&](absl::string_view) {
    ++asked;
    return false;
  };
  CHECK(semmap::internal::FindEmbeddedName(hostile, [](absl::string_view) { return true; },
                                           count)
            .empty());
  CHECK(asked <= semmap::internal::kMaxEmbeddedStarts * semmap::internal::kMaxEmbeddedEnds);
  CHECK(semmap::internal::ParameterLikeName("encoder.layer.0.output.dense.weight"));
  CHECK_FALSE(semmap::internal::ParameterLikeName("onnx::MatMul_12"));
  CHECK_FALSE(semmap::internal::ParameterLikeName("/encoder/layer.0/Add_output_0"));
  CHECK_FALSE(semmap::internal::ParameterLikeName("a..b"));
}

TEST_CASE("A quantizer's renamed weights are the manifest's and the reference's evidence") {
  // The dynamo export of BERT with every initializer renamed as a
  // post-training quantizer names its int8 copies: q_output_<name>_1.
  const std::string dir = "torch-2.15/bert-seqcls.dynamo";
  const onnx::ModelProto plain = LoadProto(dir);
  onnx::ModelProto renamed = plain;
  RenameInitializers(&renamed, [](const std::string& n) { return "q_output_" + n + "_1"; });
  const semmap::Graph reference = ParseGraph(plain);
  const semmap::Graph graph = ParseGraph(renamed);
  const semmap::Manifest manifest = ParseManifest(ReadText(Fixture(dir, "manifest.json")));

  auto own = semmap::SemanticMapper::Create(reference, &manifest);
  REQUIRE(own.ok());
  auto mapper = semmap::SemanticMapper::Create(graph, &manifest);
  REQUIRE(mapper.ok());
  CHECK(mapper->manifestFit().fits);
  CHECK(mapper->manifestFit().matched_tensors == mapper->manifestFit().named_tensors);
  CHECK(Same(Answers(*own), Answers(*mapper)) == graph.size());

  // The same without node names and metadata: the weights' names alone
  // carry the mapping, read through the tool's names.
  onnx::ModelProto nameless = renamed;
  DropNodeNames(&nameless);
  onnx::ModelProto nameless_plain = plain;
  DropNodeNames(&nameless_plain);
  const semmap::Graph bare = ParseGraph(nameless);
  const semmap::Graph bare_plain = ParseGraph(nameless_plain);
  auto bare_mapper = semmap::SemanticMapper::Create(bare, &manifest);
  REQUIRE(bare_mapper.ok());
  auto bare_plain_mapper = semmap::SemanticMapper::Create(bare_plain, &manifest);
  REQUIRE(bare_plain_mapper.ok());
  CHECK(bare_mapper->manifestFit().fits);
  CHECK(Same(Answers(*bare_plain_mapper), Answers(*bare_mapper)) == bare.size());

  // The plain export is recognised as the renamed copy's reference.
  semmap::MapperOptions options;
  options.reference = &reference;
  auto with_reference = semmap::SemanticMapper::Create(bare, &manifest, options);
  REQUIRE(with_reference.ok());
  CHECK(Same(Answers(*own), Answers(*with_reference)) == bare.size());
}

TEST_CASE("Renamed weights of another model stay evidence against its manifest") {
  // GPT-2's manifest against BERT's renamed weights: no GPT-2 parameter
  // hides in BERT's names, and the manifest is refused as before.
  onnx::ModelProto renamed = LoadProto("torch-2.15/bert-seqcls.dynamo");
  RenameInitializers(&renamed, [](const std::string& n) { return "q_output_" + n + "_1"; });
  DropNodeNames(&renamed);
  const semmap::Graph graph = ParseGraph(renamed);
  const semmap::Manifest other =
      ParseManifest(ReadText(Fixture("torch-2.15/llama-causal-lm.dynamo", "manifest.json")));
  auto mapper = semmap::SemanticMapper::Create(graph, &other);
  REQUIRE_FALSE(mapper.ok());
  CHECK(absl::StrContains(mapper.status().message(), "does not fit"));
  // A record made from another model is still rejected by the pairing.
  const semmap::Graph llama = ParseGraph(LoadProto("torch-2.15/llama-causal-lm.dynamo"));
  const semmap::Manifest own =
      ParseManifest(ReadText(Fixture("torch-2.15/bert-seqcls.dynamo", "manifest.json")));
  semmap::MapperOptions options;
  options.reference = &llama;
  auto paired = semmap::SemanticMapper::Create(graph, &own, options);
  REQUIRE_FALSE(paired.ok());
  CHECK(absl::StrContains(paired.status().message(), "not the export"));
}

TEST_CASE("A wrapper's prefix on every initializer binds like a scope wrapper") {
  // A wrapper module around BERT ("inner.embeddings.LayerNorm.bias"), its
  // node names and metadata gone, against the manifest of BERT alone.
  const std::string dir = "torch-2.15/bert-seqcls.dynamo";
  onnx::ModelProto plain = LoadProto(dir);
  DropNodeNames(&plain);
  onnx::ModelProto wrapped = plain;
  RenameInitializers(&wrapped, [](const std::string& n) {
    return semmap::internal::ParameterLikeName(n) ? "inner." + n : n;
  });
  const semmap::Graph graph = ParseGraph(wrapped);
  const semmap::Graph unwrapped = ParseGraph(plain);
  const semmap::Manifest manifest = ParseManifest(ReadText(Fixture(dir, "manifest.json")));
  auto mapper = semmap::SemanticMapper::Create(graph, &manifest);
  REQUIRE(mapper.ok());
  CHECK(mapper->rootBinding().wrapper == std::vector<std::string>{"inner"});
  CHECK(mapper->manifestFit().fits);
  auto base = semmap::SemanticMapper::Create(unwrapped, &manifest);
  REQUIRE(base.ok());
  CHECK(base->rootBinding().wrapper.empty());
  CHECK(Same(Answers(*base), Answers(*mapper)) == graph.size());
}

TEST_CASE("A wrapper attribute spelt otherwise where the manifest was written binds by structure") {
  // The TorchScript export of BertForSequenceClassification ("/bert/...",
  // "bert.embeddings...") against its manifest with the attribute written
  // "_bert": the root binds to "_bert" under the ONNX-only scope "/bert".
  const std::string dir = "torch-2.15/bert-seqcls.torchscript";
  const semmap::Graph graph = ParseGraph(LoadProto(dir));
  nlohmann::json json = nlohmann::json::parse(ReadText(Fixture(dir, "manifest.json")));
  // The head's manifest alone around "bert": the model's classifier and
  // dropout are not in the renamed wrapper's manifest.
  nlohmann::json modules = nlohmann::json::array();
  for (nlohmann::json m : json.at("modules")) {
    std::string path = m.at("path").get<std::string>();
    if (!path.empty() && path != "bert" && !absl::StartsWith(path, "bert.")) continue;
    m["path"] = path.empty() ? path : "_" + path;
    if (!m.at("parent").is_null() && !m.at("parent").get<std::string>().empty()) {
      m["parent"] = "_" + m.at("parent").get<std::string>();
    }
    nlohmann::json children = nlohmann::json::array();
    for (const auto& c : m.at("children")) {
      const std::string child = c.get<std::string>();
      if (child == "bert" || absl::StartsWith(child, "bert.")) children.push_back("_" + child);
    }
    m["children"] = children;
    m.erase("forward");
    modules.push_back(m);
  }
  json["modules"] = modules;
  json["schema_version"] = 1;
  const semmap::Manifest manifest = ParseManifest(json.dump());
  REQUIRE(manifest.find("_bert.encoder.layer.0.attention.self.query") != semmap::kNoModule);
  auto mapper = semmap::SemanticMapper::Create(graph, &manifest);
  REQUIRE(mapper.ok());
  CHECK(manifest.path(mapper->rootBinding().root) == "_bert");
  CHECK(mapper->rootBinding().wrapper == std::vector<std::string>{"bert"});
  CHECK(mapper->manifestFit().fits);
  const absl::StatusOr<semmap::Mapping> query =
      mapper->moduleFor("/bert/encoder/layer.0/attention/self/query/MatMul");
  REQUIRE(query.ok());
  CHECK(query->module_path == "_bert.encoder.layer.0.attention.self.query");
}

}  // namespace
