// DerivedNames (mapping/steps/derived_names.h): names an exporter made
// from one of a module's own tensors, found the same way in small modules
// (searched) and large ones (hashed).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "mapping/steps/derived_names.h"
#include "semmap/manifest.h"

namespace {

TEST_CASE("Names derived from a module's tensor, in small and large modules", "[manifest_fit]") {
  // The same answers whether the module's tensors are searched (3) or
  // hashed (40): a tensor's name, an underscore and at least one more
  // character.
  for (const int extra : {0, 37}) {
    CAPTURE(extra);
    std::string params = R"({"name":"weight","shape":[2,2],"dtype":"float32"},)"
                         R"({"name":"w_x","shape":[2],"dtype":"float32"})";
    for (int i = 0; i < extra; ++i) {
      absl::StrAppend(&params, R"(,{"name":"t)", i, R"(","shape":[2],"dtype":"float32"})");
    }
    const std::string json = absl::StrCat(
        R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},)",
        R"("modules":[{"path":"","class":"M","qualified_class":"t.M","parent":null,"children":["m"],)",
        R"("parameters":[],"buffers":[]},{"path":"m","class":"C","qualified_class":"t.C","parent":"",)",
        R"("children":[],"parameters":[)", params,
        R"(],"buffers":[{"name":"running_mean","shape":[2],"dtype":"float32"}]}]})");
    auto manifest = semmap::Manifest::Parse(json, "derived.json");
    REQUIRE(manifest.ok());
    semmap::internal::DerivedNames derived(*manifest);
    const semmap::ModuleId m = manifest->find("m");
    for (const auto& [name, want] : std::vector<std::pair<std::string, bool>>{
             {"m.weight_bias", true}, {"m.weight_", false}, {"m.weight", false},
             {"m.weightx_y", false}, {"m.w_x_y", true}, {"m.w_y", false}, {"m.w", false},
             {"m.running_mean_q", true}, {"m.t0_fold", extra > 0}, {"m._weight_b", false},
             {"m.x_weight_b", false}, {"m.weight_bias_and_more_" + std::string(100, 'z'), true}}) {
      CAPTURE(name);
      CHECK(derived.DerivedFromOwnTensor(m, name) == want);
    }
  }
}

}  // namespace
