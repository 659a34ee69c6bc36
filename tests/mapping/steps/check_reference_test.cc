// Whether a reference can be the export a processed file came from
// (mapping/steps/check_reference.h).
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/steps/check_reference.h"
#include "semmap/semmap.h"
#include "test_util.h"

using semmap::Graph;
using semmap::Rules;
using semmap_test::AddInitializer;
using semmap_test::AddNode;
using semmap_test::MakeModel;
using semmap_test::ParseGraph;

TEST_CASE("CheckSameModel weighs initializer names and shapes", "[reference]") {
  auto model = [](std::vector<std::pair<std::string, std::vector<long>>> inits) {
    onnx::ModelProto m = MakeModel();
    for (auto& [name, dims] : inits) AddInitializer(m.mutable_graph(), name, dims);
    AddNode(m.mutable_graph(), "n", "Identity", {inits.front().first}, {"y"});
    return ParseGraph(m);
  };
  const Graph original = model({{"a.weight", {2, 3}}, {"a.bias", {3}}, {"b.weight", {3, 3}},
                                {"b.bias", {3}}});
  SECTION("a quantized copy") {
    const Graph q = model({{"a.weight_quantized", {2, 3}}, {"a.weight_scale", {1}},
                           {"a.weight_zero_point", {1}}, {"a.bias", {3}},
                           {"b.weight", {3, 3}}, {"b.bias", {3}}});
    CHECK(semmap::internal::CheckSameModel(q, original, Rules::Default()).ok());
  }
  SECTION("another model") {
    const Graph other = model({{"c.weight", {2, 3}}, {"a.bias", {3}}, {"d.weight", {4}}});
    const absl::Status s = semmap::internal::CheckSameModel(other, original, Rules::Default());
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()),
               Catch::Contains("the model has 1 of the reference's 4 initializers"));
  }
  SECTION("same names, other shapes") {
    const Graph other = model({{"a.weight", {4, 3}}, {"a.bias", {4}}, {"b.weight", {3, 3}},
                               {"b.bias", {3}}});
    const absl::Status s = semmap::internal::CheckSameModel(other, original, Rules::Default());
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(s.message()), Catch::Contains("2 shared initializers differ in shape"));
    CHECK_THAT(std::string(s.message()), Catch::Contains("a.weight [4,3] vs [2,3]"));
  }
}

// Pins NamingOf on the three ways the corpus names modules: TorchScript's
// scoped node names, the dynamo exporter's module stacks, and none (names
// stripped), with the distinct scopes each names.
TEST_CASE("NamingOf tells scoped names, module stacks and stripped names apart",
          "[reference][fixture]") {
  const struct {
    const char* dir;
    semmap::NodeNaming scheme;
  } cases[] = {{"bert-seqcls.torchscript", semmap::NodeNaming::kScopes},
               {"bert-seqcls.dynamo", semmap::NodeNaming::kMetadata},
               {"bert-seqcls.torchscript.stripped", semmap::NodeNaming::kNone}};
  for (const auto& c : cases) {
    CAPTURE(c.dir);
    const semmap::internal::GraphNaming naming =
        semmap::internal::NamingOf(semmap_test::LoadGraph(c.dir));
    CHECK(naming.scheme == c.scheme);
    if (c.scheme == semmap::NodeNaming::kNone) {
      CHECK(naming.scopes == 0);
    } else {
      CHECK(naming.scopes > 20);  // a BERT's embeddings, layers and head
    }
  }
}
