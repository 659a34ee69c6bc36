#include <string>

#include "catch2/catch.hpp"
#include "mapped_fixture.h"
#include "nlohmann/json.hpp"
#include "semmap/profile.h"
#include "semmap/semmap.h"

using semmap_test::Fixture;
using semmap_test::LoadMapped;

namespace {

std::string KernelEvent(const std::string& node, const std::string& op, int dur) {
  return nlohmann::json({{"cat", "Node"},
                         {"ph", "X"},
                         {"name", node + "_kernel_time"},
                         {"dur", dur},
                         {"args", {{"op_name", op}, {"provider", "CPUExecutionProvider"}}}})
      .dump();
}

}  // namespace

TEST_CASE("Malformed profiles are refused with the file and the JSON location", "[profile]") {
  auto [text, message] = GENERATE(table<std::string, std::string>({
      {"", "p.json: empty file"},
      {"[{\"cat\": \"Node\",", "p.json: not valid JSON at byte"},
      {"{\"events\": []}", "p.json: not an ONNX Runtime profile: a JSON object without"},
      {"{\"traceEvents\": 3}", "p.json: /traceEvents: not an ONNX Runtime profile"},
      {"\"trace\"", "expected a JSON array of trace events, found string"},
      {"[1]", "p.json: /0: expected a trace event (object), found number"},
      {"[{\"cat\": 5}]", "p.json: /0/cat: expected a string, found number"},
      {"[{\"cat\": \"Node\", \"name\": \"a_kernel_time\"}]", "p.json: /0/dur: missing"},
      {"[{\"cat\": \"Node\", \"name\": \"a_kernel_time\", \"dur\": \"3\"}]",
       "p.json: /0/dur: expected a number, found string"},
      {"[{\"cat\": \"Node\", \"name\": \"a_kernel_time\", \"dur\": -1}]",
       "p.json: /0/dur: not a duration"},
      {"[{\"cat\": \"Node\", \"name\": \"a_kernel_time\", \"dur\": 1e300}]",
       "p.json: /0/dur: not a duration"},
      {"[{\"cat\": \"Node\", \"name\": \"a_kernel_time\", \"dur\": 1, \"args\": []}]",
       "p.json: /0/args: expected an object"},
      {"[{\"cat\": \"Node\", \"name\": \"a_kernel_time\", \"dur\": 1, \"args\": {\"op_name\": 1}}]",
       "p.json: /0/op_name: expected a string"},
      {"{\"traceEvents\": [{}, {\"cat\": \"Session\", \"name\": \"model_run\"}]}",
       "p.json: /traceEvents/1/dur: missing"},
      {std::string(100, '[') + std::string(100, ']'), "p.json"},
  }));
  CAPTURE(text);
  auto p = semmap::Profile::Parse(text, "p.json");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(p.status().message()), Catch::Contains(message));
}

TEST_CASE("Profile limits are options", "[profile]") {
  const std::string text = "[" + KernelEvent("a", "Add", 1) + "," + KernelEvent("b", "Add", 2) + "]";
  semmap::ProfileOptions options;
  options.max_events = 1;
  auto p = semmap::Profile::Parse(text, "p.json", options);
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(std::string(p.status().message()), Catch::Contains("2 trace events, above the limit"));
  options = {};
  options.max_file_bytes = 10;
  p = semmap::Profile::Parse(text, "p.json", options);
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(std::string(p.status().message()), Catch::Contains("above the limit of 10"));
  CHECK(semmap::Profile::Load(Fixture("bert-seqcls.torchscript", "absent.json")).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("Kernel events are summed per node; other events are skipped", "[profile]") {
  const std::string text =
      "[" + KernelEvent("a", "Add", 3) + "," + KernelEvent("b", "MatMul", 5) + "," +
      KernelEvent("a", "Add", 4) + "," +
      R"({"cat": "Node", "name": "a_fence_before", "dur": 100},)"
      R"({"cat": "Session", "name": "model_run", "dur": 20, "ph": "X"},)"
      R"({"cat": "Session", "name": "session_initialization", "dur": 900},)"
      R"({"cat": "Node", "name": "c_kernel_time", "dur": 2.6, "ph": "B"}])";
  auto p = semmap::Profile::Parse(text, "p.json");
  REQUIRE(p.ok());
  REQUIRE(p->nodes().size() == 2);
  CHECK(p->nodes()[0].name == "a");
  CHECK(p->nodes()[0].us == 7);
  CHECK(p->nodes()[0].calls == 2);
  CHECK(p->nodes()[1].op_name == "MatMul");
  CHECK(p->kernel_us() == 12);
  CHECK(p->kernel_events() == 3);
  CHECK(p->runs() == 1);
  CHECK(p->run_us() == 20);
  CHECK(p->skipped_events() == 3);
  CHECK(p->providers() == std::vector<std::string>{"CPUExecutionProvider"});
}

TEST_CASE("Profiled time goes to modules; the rest is counted by reason", "[profile][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  const semmap::Graph& g = *f->graph;
  const std::string query = "/bert/encoder/layer.1/attention/self/query/MatMul";
  const std::string key = "/bert/encoder/layer.1/attention/self/key/MatMul";
  REQUIRE(g.find(query) != semmap::kNoNode);
  const std::string text = "{\"traceEvents\": [" + KernelEvent(query, "MatMul", 10) + "," +
                           KernelEvent(query, "MatMul", 20) + "," + KernelEvent(key, "MatMul", 5) +
                           "," + KernelEvent("Attention_0", "Attention", 40) + "," +
                           KernelEvent("/bert/embeddings/Add", "Mul", 7) + "]}";
  auto p = semmap::Profile::Parse(text, "p.json");
  REQUIRE(p.ok());
  auto a = semmap::AttributeProfile(*f->mapper, *p);
  REQUIRE(a.ok());
  CHECK(a->kernel_us == 82);
  CHECK(a->attributed_us == 35);
  CHECK(a->attributed_nodes == 2);
  const semmap::Manifest& m = f->mapper->manifest();
  const auto& q = a->modules[m.find("bert.encoder.layer.1.attention.self.query")];
  CHECK(q.own_us == 30);
  CHECK(q.own_calls == 2);
  CHECK(q.own_nodes == 1);
  const auto& self = a->modules[m.find("bert.encoder.layer.1.attention.self")];
  CHECK(self.own_us == 0);
  CHECK(self.subtree_us == 35);
  CHECK(self.subtree_nodes == 2);
  CHECK(a->modules[m.root()].subtree_us == 35);
  CHECK(a->node_us[g.find(query)] == 30);
  REQUIRE(a->unattributed.size() == 2);
  CHECK(a->unattributed[0].reason == semmap::UnattributedReason::kNotInGraph);
  CHECK(a->unattributed[0].us == 40);
  CHECK(a->unattributed[0].examples == std::vector<std::string>{"Attention_0"});
  CHECK(a->unattributed[1].reason == semmap::UnattributedReason::kOpTypeMismatch);
  CHECK(a->unattributed[1].us == 7);
  REQUIRE(!a->classes.empty());
  CHECK(a->classes[0].name == "Linear");
  CHECK(a->classes[0].us == 35);
  bool layer1 = false;
  for (const semmap::LayerTime& l : a->layers) {
    if (l.item == m.find("bert.encoder.layer.1")) {
      layer1 = true;
      CHECK(l.us == 35);
      CHECK(l.index == 1);
    } else if (m.path(l.container) == "bert.encoder.layer") {
      CHECK(l.us == 0);
    }
  }
  CHECK(layer1);
}

// A fused node of ONNX Runtime's optimizer, paired with its export: with
// split_fused its time goes to its origins by the export's nodes each part
// replaced, and the totals are unchanged.
TEST_CASE("A fused node's time split over its origins", "[profile][fixture]") {
  const std::string dir = "torch-2.15/bert-seqcls.torchscript.ort-optimized";
  semmap::SemanticMapper::OpenOptions options;
  options.reference_path = Fixture("torch-2.15/bert-seqcls.torchscript", "model.onnx");
  auto mapper = semmap::SemanticMapper::Open(Fixture(dir, "model.onnx"),
                                             Fixture(dir, "manifest.json"), options);
  REQUIRE(mapper.ok());
  semmap::NodeId fused = semmap::kNoNode;
  for (semmap::NodeId i = 0; i < static_cast<semmap::NodeId>(mapper->graph().size()); ++i) {
    if (!mapper->originSharesOf(i).empty()) {
      fused = i;
      break;
    }
  }
  REQUIRE(fused != semmap::kNoNode);
  const semmap::Node node = mapper->graph().node(fused);
  const auto origins = mapper->originsOf(fused);
  const auto shares = mapper->originSharesOf(fused);
  REQUIRE(origins.size() == shares.size());
  REQUIRE(origins.size() >= 2);
  const std::string text = "[" + KernelEvent(std::string(node.name), std::string(node.op_type), 1000) + "]";
  auto p = semmap::Profile::Parse(text, "p.json");
  REQUIRE(p.ok());
  auto whole = semmap::AttributeProfile(*mapper, *p);
  REQUIRE(whole.ok());
  CHECK(whole->split_nodes == 0);
  CHECK(whole->modules[mapper->moduleFor(fused).module].own_us == 1000);
  semmap::AttributionOptions split_options;
  split_options.split_fused = true;
  auto split = semmap::AttributeProfile(*mapper, *p, split_options);
  REQUIRE(split.ok());
  CHECK(split->split_nodes == 1);
  CHECK(split->split_us == 1000);
  CHECK(split->attributed_us == 1000);
  std::uint64_t total_shares = 0;
  for (std::uint32_t s : shares) total_shares += s;
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < origins.size(); ++i) {
    const std::int64_t got = split->modules[origins[i]].own_us;
    CAPTURE(i, shares[i], total_shares, got);
    CHECK(std::abs(got * static_cast<std::int64_t>(total_shares) -
                   1000 * static_cast<std::int64_t>(shares[i])) <=
          static_cast<std::int64_t>(total_shares));
    sum += got;
  }
  CHECK(sum == 1000);
  CHECK(split->modules[mapper->manifest().root()].subtree_us == 1000);
}
