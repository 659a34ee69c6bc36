// Resolving scope segments to manifest modules (mapping/core/scope_resolver.h):
// one scope at a time (ScopeResolver), and sorted scopes sharing their
// steps (PrefixResolver), which must give exactly the same results.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "catch2/catch.hpp"
#include "mapping/core/scope_resolver.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/scope_path.h"
#include "test_util.h"

namespace {

using semmap::Graph;
using semmap::kNoModule;
using semmap::Manifest;
using semmap::internal::PrefixResolver;
using semmap::internal::ScopeResolution;
using semmap::internal::ScopeResolver;
using Segments = std::vector<absl::string_view>;
using semmap_test::Fixture;

void CheckSame(const ScopeResolution& got, const ScopeResolution& want) {
  CHECK(got.module == want.module);
  CHECK(got.resolved == want.resolved);
  CHECK(got.total == want.total);
  CHECK(got.call_suffix == want.call_suffix);
  CHECK(got.ambiguous == want.ambiguous);
  CHECK(got.indirect == want.indirect);
}

Manifest Modules() {
  return Manifest::FromModulePaths({{"enc.layer.0.attn", ""},
                                    {"enc.layer.1.attn", ""},
                                    {"enc.relu", ""},
                                    {"enc.block.layer1.fc", ""},
                                    {"twins.a.x", ""},
                                    {"twins.b.x", ""}});
}

// Pins each rule of a step: a direct child (a numbered one included), a
// call suffix folded, a descendant found past a level with indirect
// counted, equal descendants flagged ambiguous, a partial resolution, the
// wrapper consumed first (a scope outside it resolves to nothing), and
// the root scope (no segments) as the root itself.
TEST_CASE("ScopeResolver resolves each segment under the one before") {
  const Manifest m = Modules();
  const ScopeResolver resolver(m);
  const std::vector<std::string> none;
  auto resolve = [&](const Segments& s, const std::vector<std::string>& wrapper = {}) {
    return resolver.Resolve(s, m.root(), wrapper);
  };

  ScopeResolution r = resolve({"enc", "layer.0", "attn"});
  CHECK(r.complete());
  CHECK(m.path(r.module) == "enc.layer.0.attn");
  CHECK(r.resolved == 3);
  CHECK(r.indirect == 0);
  CHECK_FALSE(r.call_suffix);
  CHECK_FALSE(r.ambiguous);

  r = resolve({"enc", "relu_1"});
  CHECK(r.complete());
  CHECK(m.path(r.module) == "enc.relu");
  CHECK(r.call_suffix);

  r = resolve({"enc", "layer1", "fc"});  // "block" skipped
  CHECK(r.complete());
  CHECK(m.path(r.module) == "enc.block.layer1.fc");
  CHECK(r.indirect == 1);

  r = resolve({"twins", "x"});
  CHECK(r.complete());
  CHECK(r.ambiguous);
  CHECK(r.indirect == 1);

  r = resolve({"enc", "nowhere", "attn"});
  CHECK_FALSE(r.complete());
  CHECK(m.path(r.module) == "enc");
  CHECK(r.resolved == 1);
  CHECK(r.total == 3);

  r = resolve({"bert", "enc", "relu"}, {"bert"});
  CHECK(r.complete());
  CHECK(m.path(r.module) == "enc.relu");
  CHECK(r.resolved == 3);  // the wrapper counts
  r = resolve({"enc", "relu"}, {"bert"});
  CHECK(r.module == kNoModule);
  CHECK(r.resolved == 0);
  CHECK(resolve({}, {"bert"}).module == kNoModule);  // shorter than the wrapper

  r = resolve({});
  CHECK(r.complete());
  CHECK(r.module == m.root());

  // Under another root, its own children.
  r = resolver.Resolve(Segments{"relu"}, m.find("enc"), none);
  CHECK(m.path(r.module) == "enc.relu");
  CHECK(r.complete());
}

// Pins PrefixResolver's promise (ScopeResolver's results exactly) on a
// sorted run that reuses steps, extends a scope that failed part way,
// goes back to a shorter one, and leaves the wrapper between two that
// start with it.
TEST_CASE("PrefixResolver gives ScopeResolver's results while sharing steps") {
  const Manifest m = Modules();
  const ScopeResolver resolver(m);
  const std::vector<Segments> scopes = {
      {},
      {"bert"},
      {"bert", "enc"},
      {"bert", "enc", "block", "layer1", "fc"},
      {"bert", "enc", "layer.0"},
      {"bert", "enc", "layer.0", "attn"},
      {"bert", "enc", "layer.0", "attn", "more"},
      {"bert", "enc", "layer.1", "attn"},
      {"bert", "enc", "nowhere", "attn"},
      {"bert", "enc", "nowhere", "attn", "x"},
      {"bert", "enc", "relu"},
      {"bert", "enc", "relu_1"},
      {"bert", "twins", "x"},
      {"enc", "relu"},
      {"other", "enc"},
      {"twins", "a", "x"},
  };
  for (const std::vector<std::string>& wrapper :
       {std::vector<std::string>{}, std::vector<std::string>{"bert"}}) {
    PrefixResolver prefix(resolver, m.root(), wrapper);
    for (const Segments& s : scopes) {
      CAPTURE(wrapper.size(), absl::StrJoin(s, "/"));
      CheckSame(prefix.Resolve(s), resolver.Resolve(s, m.root(), wrapper));
    }
  }
}

// The prefix-sharing resolver gives exactly the plain resolver's answers,
// in any order of the scopes (sorted is only faster), for every binding.
TEST_CASE("PrefixResolver agrees with ScopeResolver", "[fixture]") {
  for (const char* dir :
       {"bert-seqcls.torchscript", "gpt2-causal-lm.torchscript", "bart-seq2seq-lm.torchscript"}) {
    auto g = Graph::Load(Fixture(dir, "model.onnx"));
    auto m = Manifest::Load(Fixture(dir, "manifest.json"));
    REQUIRE(g.ok());
    REQUIRE(m.ok());
    std::vector<semmap::ScopePath::Segments> scopes;
    for (const semmap::Node& n : g->nodes()) {
      if (!n.name.empty() && n.name.front() == '/') {
        scopes.push_back(semmap::ScopePath::Parse(n.name).segments());
      }
    }
    REQUIRE(scopes.size() > 50);
    const semmap::internal::ScopeResolver plain(*m);
    const std::vector<std::string> no_wrapper;
    const std::vector<std::string> wrapper = {std::string(scopes[0][0])};
    for (const auto* w : {&no_wrapper, &wrapper}) {
      for (semmap::ModuleId root : {m->root(), m->module(m->root()).children.empty()
                                                   ? m->root()
                                                   : m->module(m->root()).children[0]}) {
        semmap::internal::PrefixResolver prefix(plain, root, *w);
        for (int pass = 0; pass < 2; ++pass) {
          if (pass == 1) std::sort(scopes.begin(), scopes.end());
          for (const auto& s : scopes) {
            CheckSame(prefix.Resolve(s), plain.Resolve(s, root, *w));
          }
        }
      }
    }
  }
}

}  // namespace
