// Binding the ONNX root to the manifest (mapping/steps/bind_root.h), and
// resolving every scope under the binding chosen.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "context_parts.h"
#include "mapping/core/confidence.h"
#include "mapping/core/evidence_store.h"
#include "mapping/core/scope_resolver.h"
#include "mapping/steps/bind_root.h"
#include "mapping/steps/group_scopes.h"
#include "mapping/steps/resolve_scopes.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/mapper.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::Manifest;
using semmap::ModuleId;
using semmap::RootBinding;
using semmap::Rules;
using semmap_test::LoadGraph;
using semmap_test::LoadManifest;
using semmap_test::NamedGraph;

constexpr char kBert[] = "bert-seqcls.torchscript";

// The paths of `manifest` below `prefix` ("bert."), without it: the base
// model's manifest of a task model.
Manifest Submanifest(const Manifest& manifest, const std::string& prefix) {
  std::vector<std::pair<std::string, std::string>> paths;
  for (const semmap::ModuleInfo& info : manifest.modules()) {
    if (info.path.compare(0, prefix.size(), prefix) == 0) {
      paths.emplace_back(info.path.substr(prefix.size()), info.qualified_class);
    }
  }
  return Manifest::FromModulePaths(paths);
}

TEST_CASE("Many scopes resolve on two cores as they do one by one") {
  // 12,000 distinct scopes (above the parallel threshold), half of them in
  // the manifest, some through a call suffix or a skipped level.
  std::vector<std::pair<std::string, std::string>> paths;
  std::vector<std::string> names;
  for (int i = 0; i < 12000; ++i) {
    const std::string layer = "layer." + std::to_string(i);
    if (i % 2 == 0) paths.emplace_back("enc." + layer + ".attn", "");
    if (i % 3 == 0) paths.emplace_back("enc.block." + layer + ".relu", "");
    names.push_back("/enc/" + layer + (i % 5 == 0 ? "/attn_1" : "/attn") + "/MatMul");
    if (i % 3 == 0) names.push_back("/enc/" + layer + "/relu/Relu");
  }
  const Manifest m = Manifest::FromModulePaths(paths);
  const Graph g = NamedGraph(names);
  auto scopes = semmap::internal::GroupScopes(g, Rules::Default());
  REQUIRE(scopes.ordered.size() > 12000);
  // Sorted (in two halves, merged) segment by segment, each scope once.
  REQUIRE(scopes.ordered.size() == scopes.all.size());
  for (std::size_t i = 1; i < scopes.ordered.size(); ++i) {
    const auto& a = scopes.ordered[i - 1]->segments;
    const auto& b = scopes.ordered[i]->segments;
    REQUIRE_FALSE(std::lexicographical_compare(b.begin(), b.end(), a.begin(), a.end()));
  }
  std::vector<const semmap::internal::Scope*> seen(scopes.ordered.begin(), scopes.ordered.end());
  std::sort(seen.begin(), seen.end());
  CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
  RootBinding binding;
  semmap::internal::ResolveScopesUnder(m, binding, scopes.ordered);
  const semmap::internal::ScopeResolver resolver(m);
  std::size_t complete = 0;
  for (const semmap::internal::Scope* s : scopes.ordered) {
    const auto want = resolver.Resolve(s->segments, binding.root, binding.wrapper);
    REQUIRE(s->resolution.module == want.module);
    REQUIRE(s->resolution.resolved == want.resolved);
    REQUIRE(s->resolution.call_suffix == want.call_suffix);
    REQUIRE(s->resolution.ambiguous == want.ambiguous);
    REQUIRE(s->resolution.indirect == want.indirect);
    complete += want.complete();
  }
  CHECK(complete > 6000);
  CHECK(complete < scopes.ordered.size());
  // Their outcomes, computed in two halves too, each carry their own
  // scope's evidence.
  semmap::internal::EvidenceStore store;
  semmap::internal::ScopeOutcomes(m, /*derived=*/false, &scopes, &binding, &store);
  std::size_t prefixes = 0;
  for (const semmap::internal::Scope* s : scopes.ordered) {
    const auto& r = s->resolution;
    const std::string scope_text = semmap::internal::ScopeEvidence(*s);
    if (r.complete()) {
      REQUIRE(s->outcome.module == r.module);
      REQUIRE(s->outcome.evidence ==
              scope_text + (r.call_suffix ? " (call suffix folded)" : ""));
    } else if (r.module != semmap::kNoModule && r.resolved > 0) {
      ++prefixes;
      REQUIRE(s->outcome.strategy == semmap::Strategy::kScopePrefix);
      REQUIRE(s->outcome.evidence == scope_text + ": resolved " + std::to_string(r.resolved) +
                                         " of " + std::to_string(r.total) + " segments");
    } else {
      REQUIRE_FALSE(s->outcome.mapped());
      REQUIRE(s->outcome.evidence.empty());
    }
  }
  CHECK(prefixes > 0);
  // ChooseRootBinding leaves the same resolutions under the binding it
  // chose (the identity here).
  auto again = semmap::internal::GroupScopes(g, Rules::Default());
  const RootBinding chosen = semmap::internal::ChooseRootBinding(m, again.ordered, 2);
  REQUIRE(chosen.root == m.root());
  REQUIRE(chosen.wrapper.empty());
  for (std::size_t i = 0; i < again.ordered.size(); ++i) {
    CHECK(again.ordered[i]->resolution.module == scopes.ordered[i]->resolution.module);
    CHECK(again.ordered[i]->resolution.resolved == scopes.ordered[i]->resolution.resolved);
  }
}

TEST_CASE("Root binding of a real export against its own manifest is the identity") {
  const Graph g = LoadGraph(kBert);
  const Manifest m = LoadManifest(kBert);
  const auto scopes = semmap::internal::GroupScopes(g, Rules::Default());
  const RootBinding b = semmap::internal::ChooseRootBinding(m, scopes.ordered, 2);
  CHECK(b.root == m.root());
  CHECK(b.wrapper.empty());
  // demo output: 225 of 225 scoped nodes resolve.
  CHECK(b.scoped_nodes == 225);
  CHECK(b.resolved_nodes == 225);
  // The mapper uses exactly this binding.
  auto mapper = semmap::SemanticMapper::Create(g, &m);
  REQUIRE(mapper.ok());
  CHECK(mapper->rootBinding().root == b.root);
  CHECK(mapper->rootBinding().resolved_nodes == b.resolved_nodes);
}

TEST_CASE("A task model's export binds through a wrapper around its base model's manifest") {
  // The real BERT classifier's scopes ("/bert/encoder/...") against the
  // manifest of its BertModel alone.
  const Graph g = LoadGraph(kBert);
  const Manifest base = Submanifest(LoadManifest(kBert), "bert.");
  REQUIRE(base.find("encoder.layer.0.attention.self.query") != semmap::kNoModule);
  const auto scopes = semmap::internal::GroupScopes(g, Rules::Default());
  const RootBinding b = semmap::internal::ChooseRootBinding(base, scopes.ordered, 2);
  CHECK(b.root == base.root());
  CHECK(b.wrapper == std::vector<std::string>{"bert"});
  // The scopes are left resolved under the binding chosen, not the last
  // candidate tried.
  const semmap::internal::ScopeResolver resolver(base);
  std::size_t resolved_nodes = 0;
  for (const semmap::internal::Scope* s : scopes.ordered) {
    const auto want = resolver.Resolve(s->segments, b.root, b.wrapper);
    CHECK(s->resolution.module == want.module);
    CHECK(s->resolution.resolved == want.resolved);
    if (want.complete()) resolved_nodes += s->nodes;
  }
  CHECK(resolved_nodes == b.resolved_nodes);
  // Everything under /bert resolves; the classifier head lies outside.
  CHECK(b.resolved_nodes > 200);
  CHECK(b.resolved_nodes < b.scoped_nodes);
  // Without wrapper segments allowed the identity is all that is left, and
  // it resolves fewer nodes.
  const RootBinding none = semmap::internal::ChooseRootBinding(base, scopes.ordered, 0);
  CHECK(none.wrapper.empty());
  CHECK(none.resolved_nodes < b.resolved_nodes);
}

TEST_CASE("A submodule exported alone binds to that submodule") {
  // An encoder's export: scopes start at its children.
  const Manifest m = Manifest::FromModulePaths({{"model.encoder.layer.0.attn", ""},
                                                {"model.encoder.layer.0.mlp", ""},
                                                {"model.encoder.layer.1.attn", ""},
                                                {"model.decoder.layer.0.attn", ""}});
  const Graph g = NamedGraph({"/layer.0/attn/MatMul", "/layer.0/mlp/Add", "/layer.1/attn/MatMul"});
  const auto scopes = semmap::internal::GroupScopes(g, Rules::Default());
  const std::vector<RootBinding> candidates =
      semmap::internal::RootBindingCandidates(m, scopes.ordered, 2);
  REQUIRE_FALSE(candidates.empty());
  CHECK(candidates[0].root == m.root());  // the identity comes first
  CHECK(candidates[0].wrapper.empty());
  const RootBinding b = semmap::internal::ChooseRootBinding(m, scopes.ordered, 2);
  // "layer.0" is called by both encoder and decoder; only the encoder has
  // layer.1 and layer.0.mlp.
  CHECK(m.path(b.root) == "model.encoder");
  CHECK(b.wrapper.empty());
  CHECK(b.scoped_nodes == 3);
  CHECK(b.resolved_nodes == 3);
}

TEST_CASE("Root binding does not depend on the order of the nodes") {
  const Manifest m = Manifest::FromModulePaths(
      {{"a.layer.0.x", ""}, {"a.layer.1.x", ""}, {"b.layer.0.x", ""}, {"b.layer.1.x", ""}});
  // Equally good roots "a" and "b": the tie is broken by depth then id, so
  // both node orders choose the same one.
  const Graph g1 = NamedGraph({"/layer.0/x/Relu", "/layer.1/x/Relu"});
  const Graph g2 = NamedGraph({"/layer.1/x/Relu", "/layer.0/x/Relu"});
  const auto s1 = semmap::internal::GroupScopes(g1, Rules::Default());
  const auto s2 = semmap::internal::GroupScopes(g2, Rules::Default());
  const RootBinding b1 = semmap::internal::ChooseRootBinding(m, s1.ordered, 2);
  const RootBinding b2 = semmap::internal::ChooseRootBinding(m, s2.ordered, 2);
  CHECK(b1.resolved_nodes == 2);
  CHECK(b1.root == b2.root);
  CHECK(m.path(b1.root) == "a");  // the lower module id
}

TEST_CASE("Binding candidates are capped") {
  // 300 modules called "blk" under 300 parents: 300 possible roots.
  std::vector<std::pair<std::string, std::string>> paths;
  for (int i = 0; i < 300; ++i) paths.emplace_back("p" + std::to_string(i) + ".blk", "");
  const Manifest m = Manifest::FromModulePaths(paths);
  const Graph g = NamedGraph({"/blk/Relu"});
  const auto scopes = semmap::internal::GroupScopes(g, Rules::Default());
  const auto candidates = semmap::internal::RootBindingCandidates(m, scopes.ordered, 2);
  CHECK(candidates.size() == 256);
}

}  // namespace
