// The results' JSON (semmap/results_json.h): what the tool and the Python
// package print comes from here, so the documents must parse, read as a
// dump(2) of themselves, and say what the mapper says.
#include <sstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "mapped_fixture.h"
#include "nlohmann/json.hpp"
#include "semmap/results_json.h"
#include "semmap/semmap.h"

namespace {

using nlohmann::json;

// The text is exactly the dump of what it parses to: keys sorted, two
// spaces per level, as every other semmap JSON.
void CheckLayout(const std::string& text, const std::string& suffix = "") {
  const json parsed = json::parse(text);
  CHECK(text == parsed.dump(2) + suffix);
}

}  // namespace

TEST_CASE("A node's mapping JSON says what moduleFor says", "[results_json][fixture]") {
  const auto f = semmap_test::LoadMapped("bert-seqcls.torchscript");
  const semmap::SemanticMapper& mapper = *f->mapper;
  std::size_t unmapped = 0;
  for (semmap::NodeId id = 0; id < static_cast<semmap::NodeId>(mapper.graph().size()); ++id) {
    const std::string text = semmap::MappingJson(mapper, id);
    CheckLayout(text);
    const json j = json::parse(text);
    const semmap::Mapping m = mapper.moduleFor(id);
    CAPTURE(text);
    CHECK(j.at("node") == std::string(mapper.graph().node(id).id));
    CHECK(j.at("op_type") == std::string(mapper.graph().node(id).op_type));
    CHECK(j.at("confidence") == m.confidence);
    CHECK(j.at("strategy") == std::string(semmap::StrategyName(m.strategy)));
    CHECK(j.at("class") == std::string(m.class_name));
    if (m.mapped()) {
      CHECK(j.at("module") == std::string(m.module_path));
    } else {
      CHECK(j.at("module").is_null());
      ++unmapped;
    }
    CHECK(j.size() == 11);
  }
  CHECK(unmapped < mapper.graph().size());
}

TEST_CASE("A fused node's mapping JSON lists its origins", "[results_json][fixture]") {
  const auto f = semmap_test::LoadMapped("torch-2.15/tv-resnet18.torchscript");
  const semmap::SemanticMapper& mapper = *f->mapper;
  const semmap::NodeId conv = mapper.graph().find("/layer1/layer1.0/conv2/Conv");
  REQUIRE(conv != semmap::kNoNode);
  const std::string text = semmap::MappingJson(mapper, conv);
  CheckLayout(text);
  const json j = json::parse(text);
  CHECK(j.at("module") == "layer1.0.conv2");
  CHECK(j.at("origins") == json::array({"layer1.0.conv2", "layer1.0.bn2"}));
  CHECK(j.size() == 12);
  // Keys stay in sorted order with the new one among them.
  const std::string relu = semmap::MappingJson(mapper, conv + 1);
  CHECK(json::parse(relu).count("origins") == 0);
}

TEST_CASE("The manifest fit's JSON carries every field of ManifestFit", "[results_json][fixture]") {
  const auto f = semmap_test::LoadMapped("bert-seqcls.torchscript");
  const semmap::ManifestFit& fit = f->mapper->manifestFit();
  const std::string text = semmap::ManifestFitJson(fit);
  CheckLayout(text);
  const json j = json::parse(text);
  CHECK(j.at("checked") == fit.checked);
  CHECK(j.at("fits") == fit.fits);
  CHECK(j.at("verdict") == std::string(fit.verdict()));
  CHECK(j.at("scoped_nodes") == fit.scoped_nodes);
  CHECK(j.at("resolved_nodes") == fit.resolved_nodes);
  CHECK(j.at("named_tensors") == fit.named_tensors);
  CHECK(j.at("unnamed_weights") == fit.unnamed_weights);
  CHECK(j.at("weight_size_mismatches") == fit.weight_size_mismatches);
  CHECK(j.at("notes").size() == fit.notes.size());
  CHECK(j.at("evidence") == fit.evidence);
  CHECK(j.size() == 16);
}

TEST_CASE("The summary JSON adds up", "[results_json][fixture]") {
  const auto f = semmap_test::LoadMapped("bert-seqcls.torchscript");
  const semmap::SemanticMapper& mapper = *f->mapper;
  semmap::JsonSources sources;
  sources.model = f->model_path();
  sources.manifest = f->manifest_path();
  std::ostringstream out;
  semmap::WriteSummaryJson(out, mapper, sources);
  CheckLayout(out.str(), "\n");
  const json j = json::parse(out.str());
  CHECK(j.at("nodes") == mapper.graph().size());
  CHECK(j.at("mapped") == mapper.mappedCount());
  CHECK(j.at("model") == sources.model);
  CHECK(j.at("manifest") == sources.manifest);
  CHECK(j.at("manifest_fit") == json::parse(semmap::ManifestFitJson(mapper.manifestFit())));
  CHECK_FALSE(j.contains("reference"));
  std::size_t total = 0;
  for (const auto& [name, count] : j.at("strategies").items()) total += count.get<std::size_t>();
  CHECK(total == mapper.graph().size());
  // The root's subtree holds every mapped node.
  std::size_t root_subtree = 0;
  for (const json& m : j.at("modules")) {
    if (m.at("path") == "") root_subtree = m.at("subtree_nodes");
  }
  CHECK(root_subtree == mapper.mappedCount());

  sources.manifest.clear();
  std::ostringstream without;
  semmap::WriteSummaryJson(without, mapper, sources);
  const json k = json::parse(without.str());
  CHECK(k.at("manifest").is_null());
  // The fit is the mapper's: shown whenever a manifest was checked, a named
  // file's or a provenance record's.
  CHECK(k.contains("manifest_fit"));
  CHECK(k.at("provenance").at("manifest") == "file");
  CHECK(k.at("provenance").at("record") == "absent");
  auto bare = semmap::SemanticMapper::Create(mapper.graph(), nullptr);
  REQUIRE(bare.ok());
  std::ostringstream none;
  semmap::WriteSummaryJson(none, *bare, sources);
  const json n = json::parse(none.str());
  CHECK_FALSE(n.contains("manifest_fit"));
  CHECK(n.at("provenance").at("manifest") == "none");
}

TEST_CASE("Node and module lists stream as their dump", "[results_json][fixture]") {
  const auto f = semmap_test::LoadMapped("bert-seqcls.torchscript");
  const semmap::SemanticMapper& mapper = *f->mapper;
  const std::vector<semmap::NodeId> nodes = {3, 0, 7};
  std::ostringstream out;
  semmap::NodeQuery query;
  query.kind = semmap::NodeQuery::Kind::kModule;
  query.text = "bert";
  semmap::WriteNodeListJson(out, mapper, "m.onnx", query, nodes);
  CheckLayout(out.str(), "\n");
  const json j = json::parse(out.str());
  CHECK(j.at("count") == 3);
  CHECK(j.at("query") == json{{"kind", "module"}, {"module", "bert"}, {"subtree", false}});
  REQUIRE(j.at("nodes").size() == 3);
  CHECK(j.at("nodes")[1] == json::parse(semmap::MappingJson(mapper, 0)));

  std::ostringstream layer;  // each selector describes itself
  semmap::NodeQuery by_layer;
  by_layer.kind = semmap::NodeQuery::Kind::kLayer;
  by_layer.layer = -2;
  by_layer.has_container = true;
  by_layer.container = "bert.encoder.layer";
  semmap::WriteNodeListJson(layer, mapper, "m.onnx", by_layer, {});
  CheckLayout(layer.str(), "\n");
  CHECK(json::parse(layer.str()).at("query") ==
        json{{"container", "bert.encoder.layer"}, {"kind", "layer"}, {"layer", -2}});
  CHECK(json::parse(layer.str()).at("nodes").empty());
  std::ostringstream below;
  semmap::NodeQuery by_confidence;
  by_confidence.kind = semmap::NodeQuery::Kind::kBelow;
  by_confidence.confidence = 1.0;
  semmap::WriteNodeListJson(below, mapper, "m.onnx", by_confidence, {});
  CHECK(below.str().find("\"confidence\": 1.0,") != std::string::npos);

  // The 1.0-1.2 form, with the selector as JSON text, writes the same
  // document; text that is not JSON becomes a string.
  std::ostringstream as_text;
  semmap::WriteNodeListJson(as_text, mapper, "m.onnx",
                            std::string(R"({"subtree": false, "module": "bert", "kind": "module"})"),
                            nodes);
  CHECK(as_text.str() == out.str());
  std::ostringstream not_json;
  semmap::WriteNodeListJson(not_json, mapper, "m.onnx", std::string("layer 3 {"), {});
  CheckLayout(not_json.str(), "\n");
  CHECK(json::parse(not_json.str()).at("query") == "layer 3 {");

  std::ostringstream modules;
  const std::vector<semmap::ModuleId> ids = {mapper.manifest().root()};
  semmap::WriteModuleListJson(modules, mapper, "m.onnx", ids);
  CheckLayout(modules.str(), "\n");
  const json k = json::parse(modules.str());
  CHECK(k.at("query").at("kind") == "empty_modules");
  CHECK(k.at("modules")[0].at("path") == "");
  CHECK(k.at("modules")[0].at("class") == mapper.manifest().modelClass());
}

TEST_CASE("Containers, a profile and a truth score are written as their dump",
          "[results_json][fixture]") {
  const auto f = semmap_test::LoadMapped("bert-seqcls.torchscript");
  const semmap::SemanticMapper& mapper = *f->mapper;

  const semmap::SemanticQuery query(mapper);
  std::ostringstream containers;
  semmap::WriteContainerListJson(containers, mapper, "m.onnx", query.repeatedContainers());
  CheckLayout(containers.str(), "\n");
  const json c = json::parse(containers.str());
  REQUIRE(c.at("containers").size() == query.repeatedContainers().size());
  REQUIRE_FALSE(c.at("containers").empty());
  CHECK(c.at("containers")[0].at("items") == query.repeatedContainers()[0].items.size());

  // Every node once, one of another op type, one the graph lacks.
  json events = json::array({{{"cat", "Session"}, {"name", "model_run"}, {"dur", 900}}});
  for (std::size_t i = 0; i < mapper.graph().size(); ++i) {
    const semmap::Node& n = mapper.graph().node(static_cast<semmap::NodeId>(i));
    events.push_back({{"cat", "Node"},
                      {"name", std::string(n.name) + "_kernel_time"},
                      {"dur", static_cast<int>(i % 7) + 1},
                      {"args", {{"op_name", i == 1 ? "Other" : std::string(n.op_type)},
                                {"provider", "CPUExecutionProvider"}}}});
  }
  events.push_back({{"cat", "Node"}, {"name", "missing_kernel_time"}, {"dur", 3}});
  const auto profile = semmap::Profile::Parse(events.dump(), "p.json");
  REQUIRE(profile.ok());
  const auto attribution = semmap::AttributeProfile(mapper, *profile);
  REQUIRE(attribution.ok());
  semmap::ProfileSources sources;
  sources.model = "m.onnx";
  sources.manifest = "manifest.json";
  sources.profile = "p.json";
  std::ostringstream attributed;
  semmap::WriteProfileJson(attributed, mapper, *profile, *attribution, sources);
  CheckLayout(attributed.str(), "\n");
  const json p = json::parse(attributed.str());
  CHECK(p.at("manifest") == "manifest.json");
  CHECK(p.at("reference").is_null());
  CHECK(p.at("attributed_us") == attribution->attributed_us);
  CHECK(p.at("unattributed").size() == attribution->unattributed.size());
  CHECK(p.at("providers") == json::array({"CPUExecutionProvider"}));
  sources.manifest = "";  // named, though empty: not null
  std::ostringstream empty_name;
  semmap::WriteProfileJson(empty_name, mapper, *profile, *attribution, sources);
  CHECK(json::parse(empty_name.str()).at("manifest") == "");

  const auto truth = semmap::GroundTruth::Load(semmap_test::Fixture(f->dir, "truth.json"));
  REQUIRE(truth.ok());
  const semmap::TruthScore score = semmap::ScoreAgainstTruth(mapper, *truth, 2);
  CHECK(score.known == truth->size());
  const std::string line = semmap::TruthScoreJson(score, "m.onnx");
  CHECK(line == json::parse(line).dump());  // one line, keys sorted
  CHECK(json::parse(line).at("correct") == score.correct);
}

TEST_CASE("What a writing command did is written as its dump", "[results_json]") {
  semmap::ExtractResult extract;
  extract.module = "bert.pooler";
  extract.inputs = {"a", "b"};
  extract.initializers = {"w"};
  CheckLayout(semmap::ExtractResultJson(extract, "m.onnx", "out.onnx"));
  CHECK(json::parse(semmap::ExtractResultJson(extract, "m", "o")).at("initializers") == 1);

  semmap::StagesResult stages;
  stages.stages.resize(2);
  stages.stages[0].inputs = {"x"};
  stages.stages[1].weight = -1;
  CheckLayout(semmap::StagesResultJson(stages, "m.onnx"));
  CheckLayout(semmap::StagesResultJson(semmap::StagesResult(), "m.onnx"));

  semmap::GraphmlOptions graphml_options;
  CheckLayout(semmap::GraphmlResultJson(semmap::GraphmlResult(), graphml_options, "m", "o"));
  CHECK(json::parse(semmap::GraphmlResultJson({}, graphml_options, "m", "o")).at("depth") == -1);

  semmap::NodeDataOptions node_data_options;
  node_data_options.value = semmap::NodeDataValue::kTime;
  const std::string node_data =
      semmap::NodeDataResultJson(semmap::NodeDataResult(), node_data_options, "m", "o");
  CheckLayout(node_data);
  CHECK(json::parse(node_data).at("value") == "time");

  semmap::AnnotateOptions annotate_options;
  CheckLayout(semmap::AnnotateResultJson({}, annotate_options, "m", "o"));
  CHECK_FALSE(json::parse(semmap::AnnotateResultJson({}, annotate_options, "m", "o"))
                  .contains("renamed"));
  annotate_options.scoped_names = true;
  CheckLayout(semmap::AnnotateResultJson({}, annotate_options, "m", "o"));
  CHECK(json::parse(semmap::AnnotateResultJson({}, annotate_options, "m", "o"))
            .contains("scoped_names_kept"));

  semmap::EmbedResult embed;
  embed.fingerprint = "0123456789abcdef";
  CheckLayout(semmap::EmbedResultJson(embed, "m", "o"));
}
