#include <string>

#include "catch2/catch.hpp"
#include "mapped_fixture.h"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"
#include "temp_dir.h"

using nlohmann::json;
using semmap_test::LoadMapped;
using semmap_test::ReadBytes;
using semmap_test::TempDir;

TEST_CASE("The sidecar holds every node's mapping and the module tree", "[sidecar][fixture]") {
  const std::string dir = GENERATE(std::string("bert-seqcls.torchscript"),
                                   std::string("t5-seq2seq-lm.torchscript"));
  const bool model_specific = GENERATE(false, true);
  CAPTURE(dir, model_specific);
  auto f = LoadMapped(dir);
  semmap::SidecarOptions options;
  options.model_path = f->model_path();
  options.manifest_path = f->manifest_path();
  options.model_specific_tree = model_specific;
  const json doc = json::parse(semmap::SidecarJson(*f->mapper, options));

  CHECK(doc["format"] == "semmap.sidecar");
  CHECK(doc["schema_version"] == semmap::kSidecarSchemaVersion);
  CHECK(doc["model"]["path"] == f->model_path());
  CHECK(doc["manifest"]["model_class"] == f->manifest->modelClass());
  CHECK(doc["summary"]["mapped"] == f->mapper->mappedCount());
  REQUIRE(doc["nodes"].size() == f->graph->size());
  std::size_t agree_with_truth = 0;
  for (std::size_t i = 0; i < f->graph->size(); ++i) {
    const json& n = doc["nodes"][i];
    const semmap::Mapping& m = f->mapper->moduleFor(static_cast<semmap::NodeId>(i));
    CHECK(n["id"] == std::string(f->graph->node(static_cast<semmap::NodeId>(i)).id));
    if (m.mapped()) {
      CHECK(n["module"] == std::string(m.module_path));
    } else {
      CHECK(n["module"].is_null());
    }
    CHECK(n["strategy"] == std::string(semmap::StrategyName(m.strategy)));
    auto truth = f->truth.find(n["id"].get<std::string>());
    if (truth != f->truth.end() && n["module"] == truth->second) ++agree_with_truth;
  }
  CHECK(agree_with_truth + 2 >= f->truth.size());

  const json& tree = doc["tree"];
  CHECK(tree["view"] == (model_specific ? "model_specific" : "full"));
  const json& root = tree["modules"][0];
  CHECK(root["path"] == "");
  CHECK(root["parent"].is_null());
  CHECK(root["subtree_nodes"] == f->mapper->mappedCount());
  if (!model_specific) CHECK(tree["modules"].size() == f->manifest->size());
  if (model_specific) CHECK(tree["modules"].size() < f->manifest->size());
}

TEST_CASE("WriteSidecar writes atomically and never over the model", "[sidecar][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  TempDir tmp;
  semmap::SidecarOptions options;
  options.model_path = tmp.file("model.onnx");
  semmap_test::WriteBytes(options.model_path, ReadBytes(f->model_path()));
  const std::string model_bytes = ReadBytes(options.model_path);

  const std::string out = tmp.file("model.semmap.json");
  REQUIRE(semmap::WriteSidecar(*f->mapper, out, options).ok());
  CHECK(json::parse(ReadBytes(out))["nodes"].size() == f->graph->size());
  // Rewriting an existing sidecar is fine.
  REQUIRE(semmap::WriteSidecar(*f->mapper, out, options).ok());

  absl::Status clobber = semmap::WriteSidecar(*f->mapper, options.model_path, options);
  CHECK(clobber.code() == absl::StatusCode::kInvalidArgument);
  CHECK(ReadBytes(options.model_path) == model_bytes);

  absl::Status missing = semmap::WriteSidecar(*f->mapper, tmp.file("none/x.json"), options);
  CHECK(missing.code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.message()).find(tmp.file("none/x.json")) == 0);
}
