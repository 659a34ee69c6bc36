// Forward signatures (mapping/strategies/forward_signature.h): the
// operations expected between two anchored modules, and their matching with
// a gap's nodes by op type.
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "catch2/catch.hpp"
#include "mapping/strategies/forward_signature.h"
#include "semmap/manifest.h"
#include "semmap/rules.h"

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
  for (const ExpectedOp& op : ops) out.push_back(m.module(op.module).path + ":" + std::string(op.op));
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
