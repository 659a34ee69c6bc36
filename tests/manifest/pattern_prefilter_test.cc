// The literal prefilter in front of rule patterns
// (manifest/pattern_prefilter.h) answers as running every pattern would.
#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "manifest/pattern_prefilter.h"
#include "manifest/rule_queries.h"
#include "re2/re2.h"
#include "semmap/rules.h"

namespace {

using semmap::internal::PatternPrefilter;

std::vector<std::unique_ptr<RE2>> Compile(const std::vector<std::string>& patterns) {
  std::vector<std::unique_ptr<RE2>> out;
  for (const std::string& p : patterns) {
    out.push_back(std::make_unique<RE2>(p));
    REQUIRE(out.back()->ok());
  }
  return out;
}

bool Naive(const std::vector<std::unique_ptr<RE2>>& patterns, const std::string& text) {
  for (const auto& re : patterns) {
    if (RE2::PartialMatch(text, *re)) return true;
  }
  return false;
}

std::vector<std::string> Texts() {
  std::vector<std::string> texts = {
      "",
      "/encoder/layer.0/attention/MatMul",
      "/encoder/layer.0/attention/MatMul_output_0_QuantizeLinear",
      "/encoder/layer.0/attention/MatMul_OUTPUT_0_QuantizeLinear",
      "x_output_12_",
      "_output__",
      "_outpu_1_",
      "Ünïcode_output_3_name",
      "ÉTAPE_décodeur",
      "étape_décodeur",
      "node_Gemm_17",
      "val_3",
  };
  // Long texts, above the prefilter's stack buffer.
  texts.push_back(std::string(300, 'a') + "_output_1_" + std::string(300, 'b'));
  texts.push_back(std::string(1000, 'Z'));
  texts.push_back(std::string(500, 'q') + "_OUTPUT_7_");
  return texts;
}

void CheckAgrees(const std::vector<std::string>& patterns) {
  const auto compiled = Compile(patterns);
  const PatternPrefilter filter(compiled);
  for (const std::string& text : Texts()) {
    INFO("text: " << text);
    CHECK(filter.AnyPartialMatch(text) == Naive(compiled, text));
  }
}

TEST_CASE("The prefilter answers as running every pattern", "[rules]") {
  CheckAgrees({"_output_[0-9]+_"});                  // an atom: "_output_"
  CheckAgrees({"(?i)_OUTPUT_[0-9]+_"});              // case-insensitive
  CheckAgrees({"^/enc", "Gemm"});                     // atoms of 3 bytes and more
  CheckAgrees({"[0-9]$"});                            // no atom: run on every text
  CheckAgrees({"_output_[0-9]+_", "^val_[0-9]+$"});  // one filtered, one short-literal
  CheckAgrees({"ÉTAPE"});                             // an atom beyond ASCII
  CheckAgrees({"(?i)étape"});
  CheckAgrees({});
}

TEST_CASE("Rules read derived node names through the prefilter", "[rules]") {
  const semmap::Rules& rules = semmap::Rules::Default();
  CHECK(semmap::internal::RuleQueries(rules).IsDerivedNodeName("/encoder/layer.0/MatMul_output_0_QuantizeLinear"));
  CHECK_FALSE(semmap::internal::RuleQueries(rules).IsDerivedNodeName("/encoder/layer.0/MatMul"));
  CHECK_FALSE(semmap::internal::RuleQueries(rules).IsDerivedNodeName("/encoder/layer.0/MatMul_OUTPUT_0_QuantizeLinear"));
  CHECK_FALSE(semmap::internal::RuleQueries(rules).IsDerivedNodeName(""));
}

}  // namespace
