// The graph's kind for the calibration (mapping/steps/read_graph_kind.h),
// from its ops and what the name steps answered.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/op_traits.h"
#include "mapping/steps/read_graph_kind.h"
#include "semmap/graph.h"
#include "semmap/rules.h"
#include "semmap/strategy.h"

namespace {

using semmap::GraphKind;
using semmap::Strategy;
using semmap::internal::MappingRecord;
using semmap::internal::OpTraits;
using semmap::internal::ReadGraphKind;

MappingRecord Answered(Strategy strategy) {
  MappingRecord r;
  r.module = 0;
  r.confidence = 1.0;
  r.strategy = strategy;
  return r;
}

// Pins the rule: a quantizer's op makes kQuantized whatever the names say;
// else kNamed from a tenth of the nodes answered by the name steps (scope,
// metadata, scope prefix), and only by those; an empty graph is kUnnamed.
TEST_CASE("A graph is named when its name steps answer a tenth of its nodes") {
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back("/m/Relu_" + std::to_string(i));
  const semmap::Graph g = semmap_test::NamedGraph(names);
  const OpTraits ops(g, semmap::Rules::Default());
  std::vector<MappingRecord> records(g.size());
  CHECK(ReadGraphKind(ops, records) == GraphKind::kUnnamed);
  records[3] = Answered(Strategy::kExactScope);
  CHECK(ReadGraphKind(ops, records) == GraphKind::kUnnamed);  // 1 of 20
  records[7] = Answered(Strategy::kScopePrefix);
  CHECK(ReadGraphKind(ops, records) == GraphKind::kNamed);  // 2 of 20
  records[7] = Answered(Strategy::kExporterMetadata);
  CHECK(ReadGraphKind(ops, records) == GraphKind::kNamed);
  // Answers of other steps do not count, nor a strategy without a module.
  records[7] = Answered(Strategy::kTensorNames);
  for (int i = 10; i < 20; ++i) records[i] = Answered(Strategy::kStructure);
  CHECK(ReadGraphKind(ops, records) == GraphKind::kUnnamed);
  records[7].strategy = Strategy::kExactScope;
  records[7].module = semmap::kNoModule;
  CHECK(ReadGraphKind(ops, records) == GraphKind::kUnnamed);

  const semmap::Graph quantized =
      semmap_test::NamedGraph({"/m/a", "/m/b", "/m/c"}, "DequantizeLinear");
  const OpTraits quantized_ops(quantized, semmap::Rules::Default());
  std::vector<MappingRecord> all_named(quantized.size(), Answered(Strategy::kExactScope));
  CHECK(ReadGraphKind(quantized_ops, all_named) == GraphKind::kQuantized);

  const semmap::Graph empty = semmap_test::ParseGraph(semmap_test::MakeModel());
  CHECK(ReadGraphKind(OpTraits(empty, semmap::Rules::Default()), {}) == GraphKind::kUnnamed);
}

// Pins the kinds of three real copies of one export after the name steps:
// the plain export, its names stripped, and ONNX Runtime's quantization.
TEST_CASE("A real export, its stripped and its quantized copy are of three kinds", "[fixture]") {
  const struct {
    const char* dir;
    GraphKind kind;
  } cases[] = {{"bert-seqcls.torchscript", GraphKind::kNamed},
               {"bert-seqcls.torchscript.stripped", GraphKind::kUnnamed},
               {"bert-seqcls.torchscript.quantized", GraphKind::kQuantized}};
  for (const auto& c : cases) {
    CAPTURE(c.dir);
    const semmap::Graph g = semmap_test::LoadGraph(c.dir);
    const semmap::Manifest m = semmap_test::LoadManifest(c.dir);
    const auto steps = semmap_test::RunNameSteps(g, m);
    const OpTraits ops(g, semmap::Rules::Default());
    CHECK(ReadGraphKind(ops, steps->records) == c.kind);
  }
}

}  // namespace
