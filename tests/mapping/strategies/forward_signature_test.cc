// Forward signatures (mapping/strategies/forward_signature.h): the
// operations expected between two anchored modules, and their matching with
// a gap's nodes by op type.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "catch2/catch.hpp"
#include "mapping/strategies/forward_signature.h"
#include "nlohmann/json.hpp"
#include "semmap/manifest.h"
#include "semmap/rules.h"
#include "test_util.h"

namespace {

using semmap::kNoModule;
using semmap::Manifest;
using semmap::ModuleId;
using semmap::Rules;
using semmap::internal::ExpectedOp;
using semmap::internal::ForwardSignatures;

// A block: its input norm (a module with a weight), an attention-like
// module calling two Linears with a view between, a residual add, then a
// parameterless activation module between two Linears of an MLP.
//
//   block.forward: norm, attn, add, norm2, mlp, add
//   norm.forward, norm2.forward: pow, mean, rsqrt, mul(weight)
//   attn.forward:  q, view, transpose, o
//   mlp.forward:   up, act, down
//   act.forward:   mul, sigmoid, mul
std::string BlockManifest(bool traced) {
  auto module = [&](const std::string& path, const std::string& cls, const std::string& parent,
                    const std::string& children, const std::string& params,
                    const std::string& forward) {
    std::string m = R"({"path":")" + path + R"(","class":")" + cls +
                    R"(","qualified_class":")" + (cls == "Linear" ? "torch.nn.modules.linear." : "pkg.") +
                    cls + R"(","parent":)" + parent +
                    R"(,"children":[)" + children + R"(],"parameters":[)" + params +
                    R"(],"buffers":[])";
    if (traced) m += R"(,"forward":)" + forward;
    return m + "}";
  };
  const std::string linear_params =
      R"({"name":"weight","shape":[4,4],"dtype":"float32"},{"name":"bias","shape":[4],"dtype":"float32"})";
  const std::string linear_forward = R"([{"op":"linear","reads":["weight","bias"]}])";
  const std::string norm_params = R"({"name":"weight","shape":[4],"dtype":"float32"})";
  const std::string norm_forward =
      R"([{"op":"pow"},{"op":"mean"},{"op":"rsqrt"},{"op":"mul","reads":["weight"]}])";
  std::vector<std::string> modules = {
      module("", "Block", "null", R"("norm","attn","norm2","mlp")", "",
             R"([{"call":"norm"},{"call":"attn"},{"op":"add"},{"call":"norm2"},{"call":"mlp"},{"op":"add"}])"),
      module("norm", "RMSNorm", R"("")", "", norm_params, norm_forward),
      module("attn", "Attention", R"("")", R"("attn.q","attn.o")", "",
             R"([{"call":"attn.q"},{"op":"view"},{"op":"transpose"},{"call":"attn.o"}])"),
      module("attn.q", "Linear", R"("attn")", "", linear_params, linear_forward),
      module("attn.o", "Linear", R"("attn")", "", linear_params, linear_forward),
      module("norm2", "RMSNorm", R"("")", "", norm_params, norm_forward),
      module("mlp", "MLP", R"("")", R"("mlp.up","mlp.act","mlp.down")", "",
             R"([{"call":"mlp.up"},{"call":"mlp.act"},{"call":"mlp.down"}])"),
      module("mlp.up", "Linear", R"("mlp")", "", linear_params, linear_forward),
      module("mlp.act", "QuickGELU", R"("mlp")", "", "",
             R"([{"op":"mul"},{"op":"sigmoid"},{"op":"mul"}])"),
      module("mlp.down", "Linear", R"("mlp")", "", linear_params, linear_forward),
  };
  std::string json =
      std::string(R"({"format":"semmap.manifest","schema_version":)") + (traced ? "2" : "1") +
      R"(,"model":{"class":"Block","qualified_class":"pkg.Block"},"modules":[)";
  for (std::size_t i = 0; i < modules.size(); ++i) json += (i ? "," : "") + modules[i];
  return json + "]}";
}

std::vector<std::string> Describe(const Manifest& m, const std::vector<ExpectedOp>& ops) {
  std::vector<std::string> out;
  for (const ExpectedOp& op : ops) out.push_back(absl::StrCat(m.path(op.module), ":", op.op));
  return out;
}

TEST_CASE("Between lists what runs on the way out of A and into B") {
  auto m = Manifest::Parse(BlockManifest(true), "block.json");
  REQUIRE(m.ok());
  const ForwardSignatures signatures(*m, Rules::Default());
  REQUIRE(signatures.available());
  std::vector<ExpectedOp> ops;
  // Siblings' parent runs between them: q's linear, attn's view and
  // transpose, o's linear.
  REQUIRE(signatures.Between(m->find("attn.q"), m->find("attn.o"), &ops));
  CHECK(Describe(*m, ops) == std::vector<std::string>{"attn.q:linear", "attn:view", "attn:transpose"});
  // Up two levels to the LCA, then down: the residual add is the block's.
  REQUIRE(signatures.Between(m->find("attn.o"), m->find("mlp.up"), &ops));
  CHECK(Describe(*m, ops) == std::vector<std::string>{"attn.o:linear", ":add", "norm2:pow",
                                                      "norm2:mean", "norm2:rsqrt", "norm2:mul"});
  // A parameterless module called between two anchored ones is expanded.
  REQUIRE(signatures.Between(m->find("mlp.up"), m->find("mlp.down"), &ops));
  CHECK(Describe(*m, ops) ==
        std::vector<std::string>{"mlp.up:linear", "mlp.act:mul", "mlp.act:sigmoid", "mlp.act:mul"});
  // Out of a module with a weight of its own: from the operation reading it.
  REQUIRE(signatures.Between(m->find("norm"), m->find("attn.q"), &ops));
  CHECK(Describe(*m, ops) == std::vector<std::string>{"norm:mul"});
  // Into a model module with a weight of its own: its operations up to the
  // one reading it (a norm's arithmetic before its scale). A library
  // module's (a Linear's) nodes never come before its anchor.
  REQUIRE(signatures.Between(m->find("attn.o"), m->find("norm2"), &ops));
  CHECK(Describe(*m, ops) == std::vector<std::string>{"attn.o:linear", ":add", "norm2:pow",
                                                      "norm2:mean", "norm2:rsqrt", "norm2:mul"});
  // Not an order the forward ran (the norm runs before the attention), and
  // not a gap between two modules.
  CHECK_FALSE(signatures.Between(m->find("attn.o"), m->find("norm"), &ops));
  CHECK_FALSE(signatures.Between(m->find("attn.o"), m->find("attn.o"), &ops));
}

// Layer `k` of a ModuleList "layers": its norm, its Linear, then a residual
// add of its own (manifest JSON: the layer and its two children).
std::string Layer(const std::string& k) {
  const std::string p = "layers." + k;
  return R"({"path":")" + p + R"(","class":"Layer","qualified_class":"pkg.Layer","parent":"layers",
     "children":[")" + p + R"(.norm",")" + p + R"(.fc"],"parameters":[],"buffers":[],
     "forward":[{"call":")" + p + R"(.norm"},{"call":")" + p + R"(.fc"},{"op":"add"}]},
    {"path":")" + p + R"(.norm","class":"RMSNorm","qualified_class":"pkg.RMSNorm","parent":")" + p + R"(",
     "children":[],"parameters":[{"name":"weight","shape":[4],"dtype":"float32"}],"buffers":[],
     "forward":[{"op":"pow"},{"op":"mul","reads":["weight"]}]},
    {"path":")" + p + R"(.fc","class":"Linear","qualified_class":"torch.nn.modules.linear.Linear",
     "parent":")" + p + R"(","children":[],"parameters":[{"name":"weight","shape":[4,4],"dtype":"float32"}],
     "buffers":[],"forward":[{"op":"linear","reads":["weight"]}]})";
}

TEST_CASE("Between goes through a container of layers to the module calling them") {
  // A model calls the items of a ModuleList, which has no forward of its
  // own: between layer 0's MLP and layer 1's norm run the rest of layer 0
  // (its residual add), the model's own ops between the two calls, then
  // layer 1's norm up to its scale.
  const std::string json = R"({"format":"semmap.manifest","schema_version":2,
    "model":{"class":"Model","qualified_class":"pkg.Model"},"modules":[
    {"path":"","class":"Model","qualified_class":"pkg.Model","parent":null,
     "children":["layers"],"parameters":[],"buffers":[],
     "forward":[{"call":"layers.0"},{"op":"mul"},{"call":"layers.1"}]},
    {"path":"layers","class":"ModuleList","qualified_class":"torch.nn.modules.container.ModuleList",
     "parent":"","children":["layers.0","layers.1"],"parameters":[],"buffers":[]},
  )" + Layer("0") + "," + Layer("1") + "]}";
  auto m = Manifest::Parse(json, "layers.json");
  REQUIRE(m.ok());
  const ForwardSignatures signatures(*m, Rules::Default());
  std::vector<ExpectedOp> ops;
  REQUIRE(signatures.Between(m->find("layers.0.fc"), m->find("layers.1.norm"), &ops));
  CHECK(Describe(*m, ops) == std::vector<std::string>{"layers.0.fc:linear", "layers.0:add", ":mul",
                                                      "layers.1.norm:pow", "layers.1.norm:mul"});
}

TEST_CASE("Between needs every module on the way recorded") {
  auto m = Manifest::Parse(BlockManifest(false), "block.json");
  REQUIRE(m.ok());
  const ForwardSignatures signatures(*m, Rules::Default());
  CHECK_FALSE(signatures.available());
  std::vector<ExpectedOp> ops;
  CHECK_FALSE(signatures.Between(m->find("attn.q"), m->find("attn.o"), &ops));
  CHECK(ops.empty());
}

TEST_CASE("Align matches a gap's nodes with the expected operations by op type") {
  auto m = Manifest::Parse(BlockManifest(true), "block.json");
  REQUIRE(m.ok());
  const ForwardSignatures signatures(*m, Rules::Default());
  std::vector<ExpectedOp> ops;
  REQUIRE(signatures.Between(m->find("mlp.up"), m->find("mlp.down"), &ops));
  const ModuleId act = m->find("mlp.act");
  // QuickGELU's three nodes go to the activation module.
  std::vector<absl::string_view> gap = {"Mul", "Sigmoid", "Mul"};
  CHECK(signatures.Align(gap, ops) == std::vector<ModuleId>{act, act, act});
  // A node no operation there may be exported as matches nothing.
  gap = {"Mul", "Sigmoid", "Softmax", "Mul"};
  CHECK(signatures.Align(gap, ops) == std::vector<ModuleId>{act, act, kNoModule, act});
  // Reshape and transpose between two Linears of the attention are its own.
  REQUIRE(signatures.Between(m->find("attn.q"), m->find("attn.o"), &ops));
  const ModuleId attn = m->find("attn");
  gap = {"Reshape", "Transpose"};
  CHECK(signatures.Align(gap, ops) == std::vector<ModuleId>{attn, attn});
  // An Add that could be A's bias or the parent's residual add is not
  // decided by the order alone.
  REQUIRE(signatures.Between(m->find("attn.o"), m->find("norm2"), &ops));
  gap = {"Add"};
  CHECK(signatures.Align(gap, ops) == std::vector<ModuleId>{kNoModule});
  // Nor are two (one operation may be exported as several nodes); the
  // norm's arithmetic before its scale is the norm's.
  const ModuleId norm2 = m->find("norm2");
  gap = {"Add", "Add", "Pow", "ReduceMean", "Sqrt", "Reciprocal"};
  CHECK(signatures.Align(gap, ops) ==
        std::vector<ModuleId>{kNoModule, kNoModule, norm2, norm2, norm2, norm2});
  // A Sub nothing there runs, between two that the block does.
  gap = {"Add", "Sub", "Pow"};
  CHECK(signatures.Align(gap, ops) == std::vector<ModuleId>{kNoModule, kNoModule, norm2});
  CHECK(signatures.Align({}, ops).empty());
}

}  // namespace

namespace {

TEST_CASE("Align's work is bounded per gap and per graph") {
  auto m = Manifest::Parse(BlockManifest(true), "block.json");
  REQUIRE(m.ok());
  const ForwardSignatures signatures(*m, Rules::Default());
  const ModuleId act = m->find("mlp.act");
  // A gap too long to match with this many operations: nothing matched.
  std::vector<ExpectedOp> ops(2100, ExpectedOp{act, "sigmoid"});
  std::vector<absl::string_view> gap(2100, "Sigmoid");
  CHECK(signatures.Align(gap, ops) == std::vector<ModuleId>(2100, kNoModule));
  // Gaps under the bound match until the graph's budget is spent.
  ops.resize(2000);
  gap.resize(2000);
  std::size_t matched = 0, rounds = 0;
  for (; rounds < 40; ++rounds) {
    if (signatures.Align(gap, ops).front() != act) break;
    ++matched;
  }
  CHECK(matched > 0);
  CHECK(rounds < 40);
  CHECK(signatures.Align(gap, ops) == std::vector<ModuleId>(2000, kNoModule));
}

}  // namespace

namespace {

// Root calls a, then a chain d, d.x, d.x.x, ... `depth` deep where each
// module calls the next twice, then b; a and b hold weights. Expanding the
// chain whole is 2^depth calls; its last module runs an add, or nothing.
std::string DoublingManifest(int depth, bool leaf_op) {
  struct Entry {
    std::string path, children, forward;
  };
  std::vector<Entry> entries = {{"", R"("a","d","b")", R"([{"call":"a"},{"call":"d"},{"call":"b"}])"},
                                {"a", "", R"([{"op":"mul","reads":["w"]}])"},
                                {"b", "", R"([{"op":"mul","reads":["w"]}])"}};
  std::string path = "d";
  for (int i = 0; i < depth; ++i) {
    const std::string next = path + ".x";
    entries.push_back({path, "\"" + next + "\"",
                       R"([{"call":")" + next + R"("},{"call":")" + next + R"("}])"});
    path = next;
  }
  entries.push_back({path, "", leaf_op ? R"([{"op":"add"}])" : "[]"});
  std::string json = R"({"format":"semmap.manifest","schema_version":2,)"
                     R"("model":{"class":"M","qualified_class":"t.M"},"modules":[)";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const std::size_t dot = e.path.rfind('.');
    const std::string parent =
        i == 0 ? "null" : "\"" + (dot == std::string::npos ? std::string() : e.path.substr(0, dot)) + "\"";
    const std::string params =
        e.path == "a" || e.path == "b" ? R"({"name":"w","shape":[2],"dtype":"float32"})" : "";
    json += (i ? "," : "") + std::string(R"({"path":")") + e.path +
            R"(","class":"C","qualified_class":"t.C","parent":)" + parent + R"(,"children":[)" +
            e.children + R"(],"parameters":[)" + params + R"(],"buffers":[],"forward":)" + e.forward + "}";
  }
  return json + "]}";
}

TEST_CASE("Between gives up on a manifest whose calls double at every level") {
  auto shallow = Manifest::Parse(DoublingManifest(3, true), "doubling.json");
  REQUIRE(shallow.ok());
  std::vector<ExpectedOp> ops;
  // Three levels: 8 adds between a's weight read and b's.
  REQUIRE(ForwardSignatures(*shallow, Rules::Default()).Between(shallow->find("a"), shallow->find("b"), &ops));
  CHECK(ops.size() == 1 + 8 + 1);
  // Forty levels: 2^40 calls, cut short, whether they add operations (past
  // the bound on the operations of a gap) or none (on the events visited).
  for (bool leaf_op : {true, false}) {
    auto deep = Manifest::Parse(DoublingManifest(40, leaf_op), "doubling.json");
    REQUIRE(deep.ok());
    CHECK_FALSE(
        ForwardSignatures(*deep, Rules::Default()).Between(deep->find("a"), deep->find("b"), &ops));
  }
}

}  // namespace

namespace {

// A manifest JSON of (path, parameters, forward) entries; each parent is
// the path without its last atom and lists its children in entry order.
struct Entry {
  std::string path;
  bool weight = false;
  std::string forward;  // a JSON array
};

// Entries in manifest order, the root first; the manifest of test_util.h
// over their paths, at version 2 with their weights and forwards.
std::string ManifestOfEntries(const std::vector<Entry>& entries) {
  std::vector<std::string> paths;
  for (std::size_t i = 1; i < entries.size(); ++i) paths.push_back(entries[i].path);
  nlohmann::json doc = nlohmann::json::parse(semmap_test::ManifestJson(paths));
  doc["schema_version"] = 2;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    nlohmann::json& module = doc["modules"][i];
    if (entries[i].weight) {
      module["parameters"] = {{{"name", "w"}, {"shape", {2, 2}}, {"dtype", "float32"}}};
    }
    module["forward"] = nlohmann::json::parse(entries[i].forward);
  }
  return doc.dump();
}

// `n` copies of `event` as a JSON array's elements, then `last`.
std::string Repeated(const std::string& event, int n, const std::string& last = "") {
  std::string out = "[";
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + event;
  if (!last.empty()) out += (n ? "," : "") + last;
  return out + "]";
}

TEST_CASE("Between looks calls up in tables: no forward is scanned per gap", "[waits]") {
  // a lies 50 modules deep, each of whose forwards runs 9,999 adds before
  // its call toward a; b is the root's next call. Finding the call toward
  // a scanned all 50 forwards for every gap (5 * 10^5 events).
  std::vector<Entry> entries = {{"", false, R"([{"call":"c"},{"call":"b"}])"}};
  std::string path = "c";
  for (int depth = 0; depth < 50; ++depth) {
    const std::string next = depth + 1 < 50 ? path + ".c" : path + ".a";
    entries.push_back({path, false, Repeated(R"({"op":"add"})", 9999, R"({"call":")" + next + "\"}")});
    path = next;
  }
  entries.push_back({path, true, R"([{"op":"matmul","reads":["w"]}])"});
  entries.push_back({"b", true, R"([{"op":"matmul","reads":["w"]}])"});
  auto m = Manifest::Parse(ManifestOfEntries(entries), "deep.json");
  REQUIRE(m.ok());
  const ModuleId a = m->find(path), b = m->find("b");
  // A graph large enough that its budget never binds here.
  const ForwardSignatures signatures(*m, Rules::Default(), 1'000'000'000);
  std::vector<ExpectedOp> ops;
  std::size_t answered = 0;
  const double seconds = semmap_test::FastestSeconds(3.0, [&] {
    answered = 0;
    for (int gap = 0; gap < 20000; ++gap) {
      if (signatures.Between(a, b, &ops) && Describe(*m, ops) == std::vector<std::string>{path + ":matmul", "b:matmul"}) {
        ++answered;
      }
    }
  });
  CAPTURE(seconds);
  CHECK(answered == 20000);
  CHECK(seconds < 3.0 * semmap_test::TimeScale());  // 10^10 events scanned before
}

TEST_CASE("Between's visits are budgeted per graph as well as per gap", "[waits]") {
  // The root calls a, ten relays that each call an empty module 10,000
  // times, then b, c and d. Between a and b expands 10^5 calls: past the
  // gap's budget, it fails, and spends that much of the graph's.
  std::vector<Entry> entries = {{"", false, ""}, {"a", true, R"([{"op":"matmul","reads":["w"]}])"},
                                {"e", false, "[]"}};
  std::string root = R"([{"call":"a"})";
  for (int r = 0; r < 10; ++r) {
    const std::string relay = "r" + std::to_string(r);
    entries.push_back({relay, false, Repeated(R"({"call":"e"})", 10000)});
    root += R"(,{"call":")" + relay + "\"}";
  }
  for (const char* leaf : {"b", "c", "d"}) {
    entries.push_back({leaf, true, R"([{"op":"matmul","reads":["w"]}])"});
    root += std::string(R"(,{"call":")") + leaf + "\"}";
  }
  entries[0].forward = root + "]";
  auto m = Manifest::Parse(ManifestOfEntries(entries), "calls.json");
  REQUIRE(m.ok());
  const ModuleId a = m->find("a"), b = m->find("b"), c = m->find("c"), d = m->find("d");
  std::vector<ExpectedOp> ops;
  // A small graph: a hundred expensive gaps spend its budget, after which
  // even a gap of one operation is left open.
  const ForwardSignatures small(*m, Rules::Default(), 1000);
  REQUIRE(small.Between(c, d, &ops));
  CHECK(Describe(*m, ops) == std::vector<std::string>{"c:matmul", "d:matmul"});
  const auto start = std::chrono::steady_clock::now();
  for (int gap = 0; gap < 100; ++gap) CHECK_FALSE(small.Between(a, b, &ops));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CAPTURE(seconds);
  CHECK_FALSE(small.Between(c, d, &ops));
  // Not run again: the first run spends the graph's budget, a second
  // would be cheap for that reason alone.
  CHECK(seconds < 1.0 * semmap_test::TimeScale());
  // The budget grows with the graph: a large one still answers.
  const ForwardSignatures large(*m, Rules::Default(), 100'000'000);
  for (int gap = 0; gap < 100; ++gap) CHECK_FALSE(large.Between(a, b, &ops));
  CHECK(large.Between(c, d, &ops));
}

}  // namespace
