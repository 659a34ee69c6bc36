// What a semmap::internal::MappingContext borrows, owned together, for the
// tests that run one step or strategy on its own.
#ifndef SEMMAP_TESTS_CONTEXT_PARTS_H_
#define SEMMAP_TESTS_CONTEXT_PARTS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_context.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/core/origin_table.h"
#include "mapping/core/tensor_evidence.h"
#include "mapping/steps/bind_root.h"
#include "mapping/steps/group_scopes.h"
#include "mapping/steps/resolve_scopes.h"
#include "nlohmann/json.hpp"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"
#include "semmap/root_binding.h"
#include "semmap/rules.h"
#include "test_util.h"

namespace semmap_test {

// A fixture's model and manifest (Fixture(dir, ...)).
inline semmap::Graph LoadGraph(const std::string& dir) {
  auto g = semmap::Graph::Load(Fixture(dir, "model.onnx"));
  REQUIRE(g.ok());
  return *std::move(g);
}

inline semmap::Manifest LoadManifest(const std::string& dir) {
  auto m = semmap::Manifest::Load(Fixture(dir, "manifest.json"));
  REQUIRE(m.ok());
  return *std::move(m);
}

inline semmap::Graph ParseGraph(const onnx::ModelProto& model) {
  auto g = semmap::Graph::Parse(Serialize(model), "test");
  REQUIRE(g.ok());
  return *std::move(g);
}

// A graph of nodes named `names` (op `op`, chained), for scope-level
// behaviour that real exports do not isolate.
inline semmap::Graph NamedGraph(const std::vector<std::string>& names,
                                const std::string& op = "Relu") {
  onnx::ModelProto model = MakeModel();
  std::string previous = "x";
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string out = "v" + std::to_string(i);
    AddNode(model.mutable_graph(), names[i], op, {previous}, {out});
    previous = out;
  }
  return ParseGraph(model);
}

// `records` empty: one unmapped record per node.
struct ContextParts {
  ContextParts(const semmap::Graph& g, const semmap::Manifest& m,
               std::vector<semmap::internal::MappingRecord> initial = {},
               const semmap::Rules& r = semmap::Rules::Default(),
               const semmap::RootBinding& binding = {})
      : graph(g),
        manifest(m),
        rules(r),
        ops(g, r),
        tensors(g, m, r, ops, binding.root, binding.wrapper),
        records(initial.empty() ? std::vector<semmap::internal::MappingRecord>(g.size())
                                : std::move(initial)) {}

  semmap::internal::MappingContext context() {
    return {graph, manifest, rules, ops, tensors, records, evidence, origins};
  }

  const semmap::Graph& graph;
  const semmap::Manifest& manifest;
  const semmap::Rules& rules;
  const semmap::internal::OpTraits ops;
  const semmap::internal::TensorEvidence tensors;
  std::vector<semmap::internal::MappingRecord> records;
  semmap::internal::EvidenceStore evidence;
  semmap::internal::OriginTable origins;
};

// One module of ManifestWithTensors: path, class, qualified class, own
// parameters as "name:d0xd1".
struct ManifestModule {
  std::string path;
  std::string class_name;
  std::string qualified;
  std::vector<std::string> tensors;
};

// Manifest JSON of `modules` (parents before children) under a root of
// class "M", with their parameters.
inline std::string ManifestWithTensors(const std::vector<ManifestModule>& modules) {
  nlohmann::json out = {{"format", "semmap.manifest"},
                        {"schema_version", 1},
                        {"model", {{"class", "M"}, {"qualified_class", "t.M"}}}};
  nlohmann::json list = nlohmann::json::array();
  std::vector<ManifestModule> all = {{"", "M", "t.M", {}}};
  all.insert(all.end(), modules.begin(), modules.end());
  for (const ManifestModule& m : all) {
    const std::size_t dot = m.path.rfind('.');
    nlohmann::json entry = {{"path", m.path}, {"class", m.class_name},
                            {"qualified_class", m.qualified}, {"buffers", nlohmann::json::array()}};
    entry["parent"] = m.path.empty() ? nlohmann::json()
                                     : nlohmann::json(dot == std::string::npos ? "" : m.path.substr(0, dot));
    nlohmann::json children = nlohmann::json::array();
    for (const ManifestModule& c : all) {
      if (c.path.empty() || c.path == m.path) continue;
      const std::size_t cd = c.path.rfind('.');
      if ((cd == std::string::npos ? "" : c.path.substr(0, cd)) == m.path) children.push_back(c.path);
    }
    entry["children"] = children;
    nlohmann::json params = nlohmann::json::array();
    for (const std::string& t : m.tensors) {
      const std::size_t colon = t.find(':');
      nlohmann::json shape = nlohmann::json::array();
      std::size_t start = colon + 1;
      while (start <= t.size()) {
        const std::size_t x = t.find('x', start);
        shape.push_back(std::stoll(t.substr(start, x == std::string::npos ? std::string::npos : x - start)));
        if (x == std::string::npos) break;
        start = x + 1;
      }
      params.push_back({{"name", t.substr(0, colon)}, {"shape", shape}, {"dtype", "float32"}});
    }
    entry["parameters"] = params;
    list.push_back(entry);
  }
  out["modules"] = list;
  return out.dump();
}

// What the mapper's name steps give `graph` with `manifest`, as
// SemanticMapper::Build runs them: the nodes grouped by scope, the root
// bound, each scope's outcome given to its nodes. For the steps that read
// them (the graph's kind, the manifest's fit).
struct NameSteps {
  semmap::RootBinding binding;
  semmap::internal::EvidenceStore evidence;  // the records' texts
  std::vector<semmap::internal::MappingRecord> records;  // per node
  // Per node, the module its scope names when resolved completely, else
  // kNoModule (ResolvedModulesOfNodes).
  std::vector<semmap::ModuleId> scope_modules;
};

inline std::unique_ptr<NameSteps> RunNameSteps(const semmap::Graph& graph,
                                               const semmap::Manifest& manifest,
                                               const semmap::Rules& rules = semmap::Rules::Default()) {
  auto out = std::make_unique<NameSteps>();
  semmap::internal::GraphScopes scopes = semmap::internal::GroupScopes(graph, rules);
  out->binding = semmap::internal::ChooseRootBindings(manifest, scopes.ordered,
                                                      semmap::MapperOptions{}.max_wrapper_segments);
  semmap::internal::ScopeOutcomes(manifest, /*derived=*/false, &scopes, &out->binding,
                                  &out->evidence);
  out->records.resize(graph.size());
  semmap::internal::ApplyScopeOutcomes(scopes, &out->records);
  out->scope_modules = semmap::internal::ResolvedModulesOfNodes(scopes);
  return out;
}

}  // namespace semmap_test

#endif  // SEMMAP_TESTS_CONTEXT_PARTS_H_
