// OriginTable (mapping/core/origin_table.h): the modules a node does the
// work of, kept only for nodes of two or more.
#include <cstdint>
#include <vector>

#include "catch2/catch.hpp"
#include "mapping/core/origin_table.h"
#include "semmap/manifest.h"

namespace {

using semmap::kNoModule;
using semmap::ModuleId;
using semmap::internal::OriginTable;

std::vector<ModuleId> OriginsOf(const OriginTable& t, semmap::NodeId node) {
  return {t.Of(node).begin(), t.Of(node).end()};
}

std::vector<std::uint32_t> SharesOf(const OriginTable& t, semmap::NodeId node) {
  return {t.Shares(node).begin(), t.Shares(node).end()};
}

TEST_CASE("OriginTable keeps two or more distinct modules, sorted") {
  OriginTable table;
  table.Set(3, {5, 2, 5});
  REQUIRE(table.Of(3).size() == 2);
  CHECK(table.Of(3)[0] == 2);
  CHECK(table.Of(3)[1] == 5);
  table.Set(4, {7, 7, kNoModule});  // one module: no fusion
  CHECK(table.Of(4).empty());
  table.Set(3, {1});  // overwriting with one module clears
  CHECK(table.Of(3).empty());
  CHECK(table.size() == 0);
}

// Pins Set's normalisation (unknown modules dropped, sorted, repeats
// merged into a share when counted) and that fewer than two distinct
// origins is no fusion: setting one clears what a node had.
TEST_CASE("OriginTable keeps two or more distinct origins, sorted, with their shares") {
  OriginTable t;
  CHECK(t.Of(3).empty());  // nothing set
  t.Set(3, {5, 2, 5, kNoModule, 2, 5}, /*counted=*/true);
  CHECK(OriginsOf(t, 3) == std::vector<ModuleId>{2, 5});
  CHECK(SharesOf(t, 3) == std::vector<std::uint32_t>{2, 3});  // parallel to Of
  t.Set(4, {7, 1, 7});  // not counted: a fold, a tensor name
  CHECK(OriginsOf(t, 4) == std::vector<ModuleId>{1, 7});
  CHECK(t.Shares(4).empty());
  CHECK(t.size() == 2);

  // One module, however often it is named, beside unknown ones.
  t.Set(3, {5, 5, kNoModule}, /*counted=*/true);
  CHECK(t.Of(3).empty());
  CHECK(t.Shares(3).empty());
  CHECK(t.size() == 1);
  t.Set(9, {});
  CHECK(t.size() == 1);

  // Set replaces, it does not add to, what the node had.
  t.Set(4, {8, 6});
  CHECK(OriginsOf(t, 4) == std::vector<ModuleId>{6, 8});
  t.Clear(4);
  CHECK(t.Of(4).empty());
  CHECK(t.size() == 0);
}

}  // namespace
