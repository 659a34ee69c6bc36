// Whether a record's stored answers agree with the file's own
// (mapping/steps/check_record_answers.h).
#include <cstddef>
#include <vector>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "mapping/core/mapping_record.h"
#include "mapping/steps/check_record_answers.h"
#include "semmap/manifest.h"
#include "semmap/strategy.h"

namespace {

using semmap::kNoModule;
using semmap::ModuleId;
using semmap::Strategy;
using semmap::internal::CheckRecordAnswers;
using semmap::internal::MappingRecord;
using semmap::internal::RecordAnswerCheck;

MappingRecord Own(ModuleId module, Strategy strategy) {
  MappingRecord r;
  r.module = module;
  r.confidence = 0.9;
  r.strategy = strategy;
  return r;
}

// `own` nodes of the file's own evidence then `inferred` inferred ones,
// each in module 1 + its index; the record agrees on the first `agreeing`
// of each group and puts the rest in module 0.
struct Answers {
  std::vector<ModuleId> record;
  std::vector<MappingRecord> own;
};
Answers Make(std::size_t own, std::size_t own_agreeing, std::size_t inferred,
             std::size_t inferred_agreeing) {
  Answers a;
  for (std::size_t i = 0; i < own + inferred; ++i) {
    const ModuleId module = static_cast<ModuleId>(1 + i);
    const bool is_own = i < own;
    const Strategy s = is_own ? (i % 3 == 0   ? Strategy::kExactScope
                                 : i % 3 == 1 ? Strategy::kExporterMetadata
                                              : Strategy::kTensorNames)
                              : Strategy::kStructure;
    a.own.push_back(Own(module, s));
    const bool agrees = is_own ? i < own_agreeing : i - own < inferred_agreeing;
    a.record.push_back(agrees ? module : 0);
  }
  return a;
}

RecordAnswerCheck Check(const Answers& a) { return CheckRecordAnswers(a.record, a.own); }

// Pins the judging rule: on the nodes of the file's own evidence (scope,
// metadata, parameter names) when there are kMinOwnEvidence of them,
// trusted from kMinAgreement of them on; else on every node both answer
// when there are kMinInferred; else trusted for want of evidence.
TEST_CASE("A record is judged on the file's own evidence, else on all its answers") {
  RecordAnswerCheck c = Check(Make(6, 3, 10, 0));  // half of the own: enough
  CHECK(c.trusted);
  CHECK(c.judged == 6);
  CHECK(c.agreeing == 3);
  CHECK(c.judged_all == 16);
  CHECK(c.agreeing_all == 3);
  CHECK(c.note.empty());

  c = Check(Make(6, 2, 10, 10));  // the inferred agreeing does not help
  CHECK_FALSE(c.trusted);
  CHECK(absl::StrContains(c.note, "of the 6 nodes the file places by its scopes, metadata or "
                                  "parameter names, the record puts 4 elsewhere (33.3% agree"));

  // Three own nodes are too few: all 16 answers judge, 8 agreeing is half.
  c = Check(Make(3, 0, 13, 8));
  CHECK(c.trusted);
  CHECK(c.judged == 3);
  c = Check(Make(3, 3, 13, 4));
  CHECK_FALSE(c.trusted);
  CHECK(absl::StrContains(c.note, "of the 16 nodes the file places on its own evidence, the "
                                  "record puts 9 elsewhere"));

  // Fifteen answers and three own: nothing in the file judges the record.
  c = Check(Make(3, 0, 12, 0));
  CHECK(c.trusted);
  CHECK(c.judged_all == 15);
  CHECK(Check(Make(0, 0, 0, 0)).trusted);
}

// Pins what is compared: nodes the record says nothing of and nodes the
// file does not place are passed over, and the two lists are read as far
// as both go.
TEST_CASE("Only nodes both answer are compared") {
  Answers a = Make(8, 8, 0, 0);
  a.record[0] = kNoModule;
  a.own[1].module = kNoModule;
  a.record.push_back(0);  // a node past the file's answers
  const RecordAnswerCheck c = Check(a);
  CHECK(c.judged == 6);
  CHECK(c.agreeing == 6);
  CHECK(c.judged_all == 6);
  CHECK(c.trusted);
  // The same module, not one inside it, agrees: a shifted record is not.
  Answers shifted = Make(8, 8, 0, 0);
  for (ModuleId& m : shifted.record) ++m;
  CHECK_FALSE(Check(shifted).trusted);
}

}  // namespace
