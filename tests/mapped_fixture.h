// A fixture loaded and mapped, with its truth file, for tests of the
// consumers of Mappings (query, tree, annotate, sidecar).
#ifndef SEMMAP_TESTS_MAPPED_FIXTURE_H_
#define SEMMAP_TESTS_MAPPED_FIXTURE_H_

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "mapping/core/mapping_record.h"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"
#include "test_util.h"

namespace semmap_test {

struct MappedFixture {
  std::string dir;
  std::optional<semmap::Graph> graph;
  std::shared_ptr<const semmap::Manifest> manifest;  // null without one
  std::optional<semmap::SemanticMapper> mapper;
  std::map<std::string, std::string> truth;  // node id -> module path

  std::string model_path() const { return Fixture(dir, "model.onnx"); }
  std::string manifest_path() const { return Fixture(dir, "manifest.json"); }
};

// Without `with_manifest`, mapped from the names alone.
inline std::unique_ptr<MappedFixture> LoadMapped(const std::string& dir,
                                                 bool with_manifest = true) {
  auto f = std::make_unique<MappedFixture>();
  f->dir = dir;
  auto g = semmap::Graph::Load(f->model_path());
  REQUIRE(g.ok());
  f->graph.emplace(*std::move(g));
  if (with_manifest) {
    auto m = semmap::Manifest::Load(f->manifest_path());
    REQUIRE(m.ok());
    f->manifest = std::make_shared<const semmap::Manifest>(*std::move(m));
  }
  auto mapper = semmap::SemanticMapper::Create(*f->graph, f->manifest);
  REQUIRE(mapper.ok());
  f->mapper.emplace(*std::move(mapper));
  std::ifstream in(Fixture(dir, "truth.json"));
  REQUIRE(in.good());
  const nlohmann::json truth = nlohmann::json::parse(in);
  for (const auto& [id, path] : truth.at("nodes").items()) f->truth[id] = path;
  return f;
}

// A mapper's answers as the records the mapping steps read and write, for
// tests that run one step on a finished mapping.
inline std::vector<semmap::internal::MappingRecord> RecordsOf(
    const semmap::SemanticMapper& mapper) {
  std::vector<semmap::internal::MappingRecord> records;
  for (const semmap::Mapping& m : mapper.mapAll()) {
    semmap::internal::MappingRecord r;
    r.module = m.module;
    r.confidence = m.confidence;
    r.strategy = m.strategy;
    r.evidence = m.evidence;
    records.push_back(r);
  }
  return records;
}

// True when `path` is `root` or inside its subtree.
inline bool InSubtree(const std::string& path, const std::string& root) {
  return root.empty() || path == root || path.rfind(root + ".", 0) == 0;
}

}  // namespace semmap_test

#endif  // SEMMAP_TESTS_MAPPED_FIXTURE_H_
