// What a semmap::internal::MappingContext borrows, owned together, for the
// tests that run one step or strategy on its own.
#ifndef SEMMAP_TESTS_CONTEXT_PARTS_H_
#define SEMMAP_TESTS_CONTEXT_PARTS_H_

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
#include "semmap/graph.h"
#include "semmap/manifest.h"
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

}  // namespace semmap_test

#endif  // SEMMAP_TESTS_CONTEXT_PARTS_H_
