// The scope step (mapping/steps/resolve_scopes.h): each scope's outcome
// from its resolution, and the outcome given to the scope's nodes.
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/core/confidence.h"
#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_record.h"
#include "mapping/steps/bind_root.h"
#include "mapping/steps/group_scopes.h"
#include "mapping/steps/resolve_scopes.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"

namespace {

using semmap::Graph;
using semmap::Manifest;
using semmap::RootBinding;
using semmap::Rules;
using semmap_test::NamedGraph;

TEST_CASE("ScopeOutcomes gives each scope its outcome and confidence") {
  const Manifest m = Manifest::FromModulePaths({{"enc.layer.0.attn", ""}, {"enc.relu", ""}});
  const Graph g = NamedGraph(
      {"/enc/layer.0/attn/MatMul", "/enc/relu_1/Relu", "/enc/layer.0/nowhere/Add", "/other/Add"});
  auto scopes = semmap::internal::GroupScopes(g, Rules::Default());
  semmap::internal::EvidenceStore store;
  RootBinding binding;
  semmap::internal::ResolveScopesUnder(m, binding, scopes.ordered);
  semmap::internal::ScopeOutcomes(m, /*derived=*/false, &scopes, &binding, &store);
  std::vector<semmap::internal::MappingRecord> mappings(g.size());
  semmap::internal::ApplyScopeOutcomes(scopes, &mappings);
  namespace conf = semmap::internal::confidence::scope;

  CHECK(m.path(mappings[0].module) == "enc.layer.0.attn");
  CHECK(mappings[0].strategy == semmap::Strategy::kExactScope);
  CHECK(mappings[0].confidence == conf::kExact);
  CHECK(mappings[0].evidence == "scope /enc/layer.0/attn");

  CHECK(m.path(mappings[1].module) == "enc.relu");  // "_1" folded
  CHECK(mappings[1].confidence == conf::kExactCallSuffix);
  CHECK(mappings[1].evidence == "scope /enc/relu_1 (call suffix folded)");

  CHECK(m.path(mappings[2].module) == "enc.layer.0");
  CHECK(mappings[2].strategy == semmap::Strategy::kScopePrefix);
  CHECK(mappings[2].confidence == conf::kPrefix);
  CHECK(mappings[2].evidence == "scope /enc/layer.0/nowhere: resolved 2 of 3 segments");

  CHECK_FALSE(mappings[3].mapped());
  // With a manifest, the binding's counts are ChooseRootBinding's business.
  CHECK(binding.scoped_nodes == 0);

  // A derived manifest lowers every confidence and counts the nodes.
  auto derived_scopes = semmap::internal::GroupScopes(g, Rules::Default());
  RootBinding derived_binding;
  semmap::internal::ResolveScopesUnder(m, derived_binding, derived_scopes.ordered);
  semmap::internal::ScopeOutcomes(m, /*derived=*/true, &derived_scopes, &derived_binding,
                                  &store);
  std::vector<semmap::internal::MappingRecord> derived(g.size());
  semmap::internal::ApplyScopeOutcomes(derived_scopes, &derived);
  CHECK(derived[0].confidence == conf::kExact * semmap::internal::confidence::kNoManifestFactor);
  CHECK(derived_binding.scoped_nodes == 4);
  CHECK(derived_binding.resolved_nodes == 2);
}

}  // namespace
