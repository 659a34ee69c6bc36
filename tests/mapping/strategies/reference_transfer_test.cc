// Reference transfer (MapperOptions::reference, src/mapping/strategies/reference_transfer):
// the answers carried over from the export a post-processed copy came from,
// against the copy's own.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "mapping/core/evidence_store.h"
#include "mapping/strategies/reference_transfer.h"
#include "semmap/semmap.h"
#include "test_util.h"

namespace {

using semmap::Strategy;
using semmap::internal::MappingRecord;

MappingRecord Answer(const semmap::Manifest& m, const std::string& path, double confidence,
                     Strategy strategy) {
  MappingRecord r;
  r.module = m.find(path);
  r.confidence = confidence;
  r.strategy = strategy;
  r.evidence = "test";
  return r;
}

TEST_CASE("A confident own answer is never replaced by a less confident one", "[reference]") {
  auto m = semmap::Manifest::Parse(semmap_test::ManifestJson({"blocks", "blocks.0", "blocks.1"}),
                                   "m.json");
  REQUIRE(m.ok());
  semmap::internal::EvidenceStore store;
  // Node 0: its own scope names blocks.1 exactly; the reference's span
  // merged blocks.0 and blocks.1 into their parent at 0.8. Node 1: an
  // inference built on carried-over neighbours, below the own answer.
  // Node 2: an own guess below the floor keeps giving way to a carried-over
  // answer from the file's source (measured: those carried answers are the
  // right ones more often).
  const std::vector<MappingRecord> own = {
      Answer(*m, "blocks.1", 1.0, Strategy::kExactScope),
      Answer(*m, "blocks.0", 0.97, Strategy::kExactScope),
      Answer(*m, "blocks.1", 0.89, Strategy::kTensorNames)};
  for (bool ancestor : {true, false}) {
    CAPTURE(ancestor);
    std::vector<MappingRecord> mappings = {
        Answer(*m, "blocks", 0.8, Strategy::kReference),
        Answer(*m, "blocks", 0.6, Strategy::kStructure),
        Answer(*m, "blocks", 0.8, Strategy::kReference)};
    semmap::internal::KeepOwnAnswers(own, *m, *m, ancestor, &mappings, &store);
    CHECK(m->module(mappings[0].module).path == "blocks.1");
    CHECK(mappings[0].confidence == 1.0);
    CHECK(mappings[0].strategy == Strategy::kExactScope);
    CHECK(m->module(mappings[1].module).path == "blocks.0");
    CHECK(mappings[1].confidence == 0.97);
    CHECK(m->module(mappings[2].module).path == (ancestor ? "blocks" : "blocks.1"));
  }
}

}  // namespace
