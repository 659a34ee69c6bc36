// The bad-input catalogue: every kind of hostile or broken input semmap is
// expected to meet, with the answer it gives. Each row either fails with a
// status whose code and message (naming the file and the cause) are pinned,
// or loads with a documented graceful result. Every row runs under a hang
// guard (a generous wall-clock bound, not a benchmark).
//
// Rows that exist elsewhere are not repeated but extended: graph_test.cc
// checks empty, random, truncated and wrong-message bytes through
// Graph::Parse with the default loader, the node limit, a 1 MB name and
// 200-level nesting; here the same kinds of bytes go through Graph::Load
// with *each* loader. manifest_test.cc and rules_test.cc hold the first bad
// manifests and rule files; the rows here are the ones they lack.
// docs/robustness.md lists the catalogue by category.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "io/mapped_file.h"
#include "manifest/rule_queries.h"
#include "nlohmann/json.hpp"
#include "semmap/semmap.h"
#include "temp_dir.h"
#include "test_util.h"

using semmap::Graph;
using semmap::GraphOptions;
using semmap::Loader;
using semmap::Manifest;
using semmap::Rules;
using semmap::SemanticMapper;
using semmap_test::AddNode;
using semmap_test::Fixture;
using semmap_test::MakeModel;
using semmap_test::ReadBytes;
using semmap_test::Serialize;
using semmap_test::TempDir;
using semmap_test::WriteBytes;

namespace {

// Seconds a row may take on a quiet machine (stretched on a busy one,
// semmap_test::TimeScale()): far above any row's cost, far below a hang.
constexpr double kHangBound = 5.0;

// Checks at scope exit that the row finished within kHangBound.
class HangGuard {
 public:
  HangGuard() : start_(std::chrono::steady_clock::now()) {}
  ~HangGuard() {
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    const double seconds = std::chrono::duration<double>(elapsed).count();
    CAPTURE(seconds);
    CHECK(seconds < kHangBound * semmap_test::TimeScale());
  }
  HangGuard(const HangGuard&) = delete;
  HangGuard& operator=(const HangGuard&) = delete;

 private:
  std::chrono::steady_clock::time_point start_;
};

bool Contains(absl::string_view text, absl::string_view fragment) {
  return text.find(fragment) != absl::string_view::npos;
}

// The pinned answer of a failing row.
void CheckError(const absl::Status& status, absl::StatusCode code, const std::string& origin,
                const std::string& fragment) {
  const std::string message(status.message());
  CAPTURE(message.substr(0, 300));
  REQUIRE_FALSE(status.ok());
  CHECK(message.size() < origin.size() + 600);  // hostile input is quoted abbreviated
  CHECK(status.code() == code);
  if (!origin.empty()) CHECK(message.rfind(origin + ": ", 0) == 0);  // names the file first
  CHECK(Contains(message, fragment));           // then the cause
}

std::string LcgBytes(std::size_t n, std::uint32_t seed) {
  std::string out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    out.push_back(static_cast<char>(seed >> 24));
  }
  return out;
}

// ModelProto bytes with an ir_version and a graph nesting If bodies
// `levels` deep.
std::string DeeplyNestedModelBytes(int levels) {
  std::string bytes;
  semmap_test::AppendVarint(1 << 3, &bytes);  // ir_version = 8
  semmap_test::AppendVarint(8, &bytes);
  return bytes + semmap_test::DeeplyNestedGraphBytes(levels);
}

// A model nesting If bodies `levels` deep via onnx_proto (small depths).
std::string NestedIfModel(int levels) {
  onnx::GraphProto* body = nullptr;
  auto model = semmap_test::MakeNestedIfModel(levels, &body);
  AddNode(body, "/inner/Relu", "Relu", {"c"}, {"r"});
  return Serialize(model);
}

const char* LoaderName(Loader loader) {
  return loader == Loader::kWireScan ? "wire_scan" : "protobuf";
}

// --- ONNX rows that must fail -------------------------------------------

struct BadModel {
  std::string what;
  std::string bytes;
  std::string fragment;
  GraphOptions options;
};

std::vector<BadModel> BadModels() {
  const std::string real = ReadBytes(Fixture("bert-seqcls.torchscript", "model.onnx"));
  std::vector<BadModel> rows;
  rows.push_back({"empty file", "", "empty file", {}});
  rows.push_back({"random bytes", LcgBytes(4096, 12345), "ONNX model", {}});
  rows.push_back({"random bytes after a valid header", real.substr(0, 64) + LcgBytes(4096, 7),
                  "ONNX model", {}});
  rows.push_back({"all 0xff", std::string(1000, '\xff'), "ONNX model", {}});
  rows.push_back({"JSON text", semmap_test::ManifestJson({"a"}), "ONNX model", {}});
  {
    onnx::TensorProto t;  // graph_test.cc parses one; here through Load
    t.set_name("w");
    t.add_dims(3);
    rows.push_back({"a TensorProto", t.SerializeAsString(), "ONNX model", {}});
  }
  {
    onnx::GraphProto g;  // the right fields, one level too low
    AddNode(&g, "/a/Relu", "Relu", {"x"}, {"y"});
    g.set_name("g");
    rows.push_back({"a bare GraphProto", g.SerializeAsString(), "ONNX model", {}});
  }
  {
    auto model = MakeModel();
    model.set_ir_version(0);
    AddNode(model.mutable_graph(), "/a/Relu", "Relu", {"x"}, {"y"});
    rows.push_back({"no ir_version", Serialize(model), "no ir_version", {}});
  }
  // Truncation anywhere before the end of the graph field loses part of the
  // graph: protobuf writes fields in number order, graph (7) before
  // opset_import (8) and metadata_props (14), so a model with those cleared
  // ends exactly where the graph does.
  onnx::ModelProto parsed;
  REQUIRE(parsed.ParseFromString(real));
  parsed.clear_opset_import();
  parsed.clear_metadata_props();
  parsed.clear_functions();
  const std::size_t graph_end = parsed.ByteSizeLong();
  REQUIRE(graph_end <= real.size());
  for (std::size_t i = 1; i < 40; ++i) {
    const std::size_t cut = graph_end * i / 40;
    rows.push_back({"truncated at byte " + std::to_string(cut), real.substr(0, cut), "ONNX model",
                    {}});
  }
  rows.push_back({"truncated one byte before the graph ends", real.substr(0, graph_end - 1),
                  "ONNX model", {}});
  rows.push_back({"subgraphs nested one level deeper than the limit", NestedIfModel(9),
                  "max_subgraph_depth", {}});
  rows.back().options.max_subgraph_depth = 8;
  rows.push_back({"10^5 nested messages", DeeplyNestedModelBytes(100000), "", {}});
  rows.push_back({"file above max_file_bytes", real, "above the limit", {}});
  rows.back().options.max_file_bytes = 1000;
  // ir_version 7 and an empty graph: no graph to map (second audit).
  rows.push_back({"an empty graph", std::string("\x08\x07\x3a\x00", 4), "no graph", {}});
  {
    onnx::ModelProto m = MakeModel();  // a varint above INT64_MAX reads as -1
    AddNode(m.mutable_graph(), "/a/Relu", "Relu", {"x"}, {"y"});
    m.mutable_opset_import(0)->set_version(-1);
    rows.push_back({"an opset version out of range", Serialize(m), "out of range", {}});
  }
  {
    onnx::ModelProto m = MakeModel();  // list entries bound memory whatever the file size
    onnx::NodeProto* n = AddNode(m.mutable_graph(), "/a/Concat", "Concat", {}, {"y"});
    for (int i = 0; i < 1000; ++i) n->add_input("");
    rows.push_back({"more list entries than max_list_entries", Serialize(m), "max_list_entries", {}});
    rows.back().options.max_list_entries = 999;
  }
  return rows;
}

}  // namespace

TEST_CASE("Catalogue: broken ONNX files fail with the file and the cause", "[catalogue][graph]") {
  static const std::vector<BadModel> rows = BadModels();
  const Loader loader = GENERATE(Loader::kWireScan, Loader::kProtobuf);
  const BadModel& row = GENERATE(from_range(rows));
  CAPTURE(LoaderName(loader), row.what, row.bytes.size());
  TempDir tmp;
  const std::string path = tmp.file("bad.onnx");
  WriteBytes(path, row.bytes);
  GraphOptions options = row.options;
  options.loader = loader;
  HangGuard guard;
  auto g = Graph::Load(path, options);
  CheckError(g.status(), absl::StatusCode::kInvalidArgument, path, row.fragment);
}

TEST_CASE("Catalogue: files that cannot be read", "[catalogue][graph]") {
  const Loader loader = GENERATE(Loader::kWireScan, Loader::kProtobuf);
  CAPTURE(LoaderName(loader));
  GraphOptions options;
  options.loader = loader;
  TempDir tmp;
  HangGuard guard;
  // Missing files and directories: graph_test.cc ("Bad ONNX input ...").
  CheckError(Graph::Load(tmp.file("missing/model.onnx"), options).status(),
             absl::StatusCode::kNotFound, tmp.file("missing/model.onnx"), "no such file");
  // Devices and FIFOs are refused before any read (a FIFO with no writer
  // would block); a FIFO case is in graph_test.cc.
  CheckError(Graph::Load("/dev/null", options).status(), absl::StatusCode::kInvalidArgument,
             "/dev/null", "not a regular file");
  const std::string unreadable = tmp.file("unreadable.onnx");
  WriteBytes(unreadable, "x");
  if (::geteuid() != 0) {  // root reads anything
    ::chmod(unreadable.c_str(), 0);
    auto g = Graph::Load(unreadable, options);
    REQUIRE_FALSE(g.ok());
    CHECK(std::string(g.status().message()).rfind(unreadable + ": ", 0) == 0);
  }
}

// --- ONNX rows that load: the documented graceful results ----------------

TEST_CASE("Catalogue: a mapped file truncated while read is DataLoss, not SIGBUS",
          "[catalogue][graph]") {
  HangGuard guard;
  TempDir dir;
  const std::string path = dir.path() + "/shrinking.bin";
  const long page = ::sysconf(_SC_PAGESIZE);
  WriteBytes(path, std::string(static_cast<std::size_t>(4 * page), 'x'));
  auto file = semmap::internal::MappedFile::Open(path, 1 << 20);
  REQUIRE(file.ok());
  REQUIRE(::truncate(path.c_str(), page) == 0);
  const absl::string_view bytes = file->bytes();
  CHECK(bytes[0] == 'x');
  CHECK(bytes[static_cast<std::size_t>(3 * page)] == '\0');  // a zero page, no SIGBUS
  CHECK(file->truncated());
}

// A file cut inside its last page faults nowhere (the page is still the
// file's, its end reads as zeros), and one cut past every page a reader
// touched faults nowhere either: the size tells them.
TEST_CASE("Catalogue: a mapped file cut inside its last page is DataLoss, too",
          "[catalogue][graph]") {
  HangGuard guard;
  TempDir dir;
  const std::string path = dir.path() + "/shrinking.bin";
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t size = 4 * page + 100;
  for (const std::size_t cut : {size - 1, 4 * page + 10, 4 * page, 2 * page}) {
    CAPTURE(cut);
    WriteBytes(path, std::string(size, 'x'));
    auto file = semmap::internal::MappedFile::Open(path, 1 << 20);
    REQUIRE(file.ok());
    CHECK(semmap::internal::NotTruncated(*file, path).ok());
    REQUIRE(::truncate(path.c_str(), static_cast<off_t>(cut)) == 0);
    const absl::string_view bytes = file->bytes();
    CHECK(bytes[0] == 'x');
    if (cut > 4 * page) CHECK(bytes[size - 1] == '\0');  // the last page is kept, read as zeros
    CHECK(file->truncated());
    CHECK(semmap::internal::NotTruncated(*file, path).code() == absl::StatusCode::kDataLoss);
  }
  // Growing is not shrinking.
  WriteBytes(path, std::string(size, 'x'));
  auto file = semmap::internal::MappedFile::Open(path, 1 << 20);
  REQUIRE(file.ok());
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(size + page)) == 0);
  CHECK_FALSE(file->truncated());
}

// A reader skipping payloads touches pages far apart: after a truncation
// each such read faults on its own. 1 GiB (sparse) read every other page
// is 131072 faults, twice the mappings vm.max_map_count allows by default:
// a guard mapping one zero page per fault runs out of them and the process
// dies of SIGBUS. Each truncation point runs in a child process, so that
// such a death fails the row instead of the test run.
TEST_CASE("Catalogue: a large mapped file truncated at any point while read is DataLoss",
          "[catalogue][graph][sigbus]") {
  TempDir dir;
  const std::string path = dir.path() + "/large.bin";
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t size = std::size_t{1} << 30;
  for (const std::size_t cut : {std::size_t{0}, page + 1, size / 3, size / 2 + 7 * page,
                                size - page}) {
    CAPTURE(cut);
    {
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
      REQUIRE(fd >= 0);
      REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);  // sparse: no disk used
      REQUIRE(::pwrite(fd, "x", 1, 0) == 1);
      ::close(fd);
    }
    HangGuard guard;
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      auto file = semmap::internal::MappedFile::Open(path, size);
      if (!file.ok()) ::_exit(10);
      if (::truncate(path.c_str(), static_cast<off_t>(cut)) != 0) ::_exit(11);
      const absl::string_view bytes = file->bytes();
      unsigned sum = 0;
      for (std::size_t at = 0; at < size; at += 2 * page) sum += static_cast<unsigned char>(bytes[at]);
      sum += static_cast<unsigned char>(bytes[size - 1]);
      // Past the cut every byte reads as zero; before it, the file's own.
      if (sum != (cut > 0 ? 'x' : 0)) ::_exit(12);
      const absl::Status status = semmap::internal::NotTruncated(*file, path);
      if (status.code() != absl::StatusCode::kDataLoss) ::_exit(13);
      ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CAPTURE(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

TEST_CASE("Catalogue: odd but valid graphs load and map", "[catalogue][graph][mapper]") {
  const Loader loader = GENERATE(Loader::kWireScan, Loader::kProtobuf);
  CAPTURE(LoaderName(loader));
  GraphOptions options;
  options.loader = loader;
  const auto manifest = Manifest::Parse(semmap_test::ManifestJson({"a", "a.b"}), "m.json");
  REQUIRE(manifest.ok());

  SECTION("dangling inputs: no producer, no error, still mapped by scope") {
    auto model = MakeModel();
    AddNode(model.mutable_graph(), "/a/b/MatMul", "MatMul", {"nowhere", "also_nowhere"}, {"y"});
    HangGuard guard;
    auto g = Graph::Parse(Serialize(model), "dangling.onnx", options);
    REQUIRE(g.ok());
    CHECK(g->producer("nowhere") == semmap::kNoNode);
    CHECK(g->consumers("nowhere").empty());  // unknown values have no consumers list
    auto mapper = SemanticMapper::Create(*g, &*manifest);
    REQUIRE(mapper.ok());
    CHECK(mapper->moduleFor(0).module_path == "a.b");
  }
  SECTION("duplicate node names: ids get #index; the bare name is not a unique key") {
    // Id assignment itself: graph_test.cc ("Node ids are unique ...").
    auto model = MakeModel();
    AddNode(model.mutable_graph(), "/a/Relu", "Relu", {"x"}, {"y"});
    AddNode(model.mutable_graph(), "/a/Relu", "Relu", {"y"}, {"z"});
    HangGuard guard;
    auto g = Graph::Parse(Serialize(model), "dup.onnx", options);
    REQUIRE(g.ok());
    auto mapper = SemanticMapper::Create(*g, &*manifest);
    REQUIRE(mapper.ok());
    auto by_name = mapper->moduleFor("/a/Relu");
    CheckError(by_name.status(), absl::StatusCode::kNotFound, "", "/a/Relu");
    auto by_id = mapper->moduleFor("/a/Relu#1");
    REQUIRE(by_id.ok());
    CHECK(by_id->module_path == "a");
  }
  SECTION("cycles: a value loop terminates and maps") {
    auto model = MakeModel();
    AddNode(model.mutable_graph(), "Add_0", "Add", {"x", "c"}, {"a"});
    AddNode(model.mutable_graph(), "Identity_1", "Identity", {"a"}, {"b"});
    AddNode(model.mutable_graph(), "Mul_2", "Mul", {"b"}, {"c"});  // feeds Add_0 again
    AddNode(model.mutable_graph(), "/a/b/Relu", "Relu", {"c"}, {"y"});
    HangGuard guard;
    auto g = Graph::Parse(Serialize(model), "cycle.onnx", options);
    REQUIRE(g.ok());
    CHECK(g->producer("c") == 2);
    auto mapper = SemanticMapper::Create(*g, &*manifest);
    REQUIRE(mapper.ok());
    CHECK(mapper->moduleFor(3).module_path == "a.b");
    for (const semmap::Mapping& m : mapper->mapAll()) {
      CHECK((m.confidence == 0.0) == !m.mapped());
    }
  }
  SECTION("a name of 10^6 segments: bounded segments, mapped in time") {
    std::string name;
    name.reserve(2'000'010);
    for (int i = 0; i < 1'000'000; ++i) name += "/a";
    name += "/Relu";
    const semmap::ScopePath p = semmap::ScopePath::Parse(name);
    CHECK(p.truncated());
    CHECK(p.segments().size() == semmap::ScopePath::kDefaultMaxSegments);
    auto model = MakeModel();
    AddNode(model.mutable_graph(), name, "Relu", {"x"}, {"y"});
    AddNode(model.mutable_graph(), "/a/b/Relu", "Relu", {"y"}, {"z"});
    HangGuard guard;
    auto g = Graph::Parse(Serialize(model), "segments.onnx", options);
    REQUIRE(g.ok());
    CHECK(g->node(0).name.size() == name.size());
    auto mapper = SemanticMapper::Create(*g, &*manifest);
    REQUIRE(mapper.ok());
    CHECK(mapper->moduleFor(1).module_path == "a.b");
    CHECK(mapper->moduleFor(0).confidence <= 1.0);
    // Without a manifest the scope becomes a module path: still bounded.
    auto bare = SemanticMapper::Create(*g, nullptr);
    REQUIRE(bare.ok());
    CHECK(bare->manifest().size() <= semmap::ScopePath::kDefaultMaxSegments + 8);
  }
  SECTION("non-UTF-8 names: kept as bytes, replaced in JSON output") {
    auto model = MakeModel();
    AddNode(model.mutable_graph(), "/a\xff\xfe/b\xc3/Relu", "Relu", {"x\x80"}, {"y\xff"});
    HangGuard guard;
    auto g = Graph::Parse(Serialize(model), "utf8.onnx", options);
    REQUIRE(g.ok());
    CHECK(g->node(0).name == "/a\xff\xfe/b\xc3/Relu");
    TempDir tmp;
    const std::string path = tmp.file("utf8.onnx");
    WriteBytes(path, Serialize(model));
    for (const semmap::Manifest* m : {&*manifest, static_cast<const Manifest*>(nullptr)}) {
      auto mapper = SemanticMapper::Create(*g, m);
      REQUIRE(mapper.ok());
      const std::string sidecar = semmap::SidecarJson(*mapper);
      const auto doc = nlohmann::json::parse(sidecar, nullptr, false);
      REQUIRE_FALSE(doc.is_discarded());
      CHECK(doc["nodes"].size() == 1);
      // Without a manifest the module path is made of those bytes too.
      semmap::AnnotateOptions annotate;
      annotate.doc_string_json = true;
      auto result = semmap::Annotate(*mapper, path, tmp.file("out.onnx"), annotate);
      REQUIRE(result.ok());
      CHECK(result->nodes == 1);
    }
  }
  SECTION("nesting exactly at the limit loads") {
    // Beyond it: the failing rows above and graph_test.cc (200 levels).
    options.max_subgraph_depth = 8;
    HangGuard guard;
    auto g = Graph::Parse(NestedIfModel(8), "deep.onnx", options);
    REQUIRE(g.ok());
    CHECK(g->subgraphs().back().depth == 8);
    CHECK(g->node(static_cast<semmap::NodeId>(g->size() - 1)).name == "/inner/Relu");
  }
}

TEST_CASE("Catalogue: missing external data is never read", "[catalogue][graph][annotate]") {
  const Loader loader = GENERATE(Loader::kWireScan, Loader::kProtobuf);
  CAPTURE(LoaderName(loader));
  auto model = MakeModel();
  onnx::GraphProto* graph = model.mutable_graph();
  AddNode(graph, "/a/b/MatMul", "MatMul", {"x", "a.b.weight"}, {"y"});
  onnx::TensorProto* w = graph->add_initializer();
  w->set_name("a.b.weight");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1024);
  w->add_dims(1024);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : {std::pair<const char*, const char*>{"location", "gone.bin"},
                                   {"offset", "0"},
                                   {"length", "4194304"}}) {
    auto* entry = w->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  TempDir tmp;
  const std::string path = tmp.file("model.onnx");
  WriteBytes(path, Serialize(model));
  GraphOptions options;
  options.loader = loader;
  HangGuard guard;
  auto g = Graph::Load(path, options);
  REQUIRE(g.ok());
  const semmap::TensorInfo* info = g->initializer("a.b.weight");
  REQUIRE(info != nullptr);
  CHECK(info->external);
  CHECK(info->dims == std::vector<std::int64_t>{1024, 1024});
  const auto manifest = Manifest::Parse(semmap_test::ManifestJson({"a", "a.b"}), "m.json");
  REQUIRE(manifest.ok());
  auto mapper = SemanticMapper::Create(*g, &*manifest);
  REQUIRE(mapper.ok());
  CHECK(mapper->moduleFor(0).module_path == "a.b");
  // Annotating copies the reference, still without reading it.
  auto result = semmap::Annotate(*mapper, path, tmp.file("out.onnx"));
  REQUIRE(result.ok());
  CHECK(result->external_tensors == 1);
}

// --- Manifests ------------------------------------------------------------

namespace {

struct BadManifest {
  std::string what;
  std::string text;
  absl::StatusCode code;
  std::string fragment;
};

// The valid two-module manifest of test_util.h with one edit at a JSON
// pointer: a value to set, or a removal when `remove` is true.
std::string Edited(const std::string& pointer, const nlohmann::json& value, bool remove = false) {
  nlohmann::json doc = nlohmann::json::parse(semmap_test::ManifestJson({"a", "a.b"}));
  const nlohmann::json::json_pointer ptr(pointer);
  if (remove) {
    doc[ptr.parent_pointer()].erase(ptr.back());
  } else {
    doc[ptr] = value;
  }
  return doc.dump();
}

std::string Removed(const std::string& pointer) { return Edited(pointer, nullptr, true); }

// The same manifest at schema version 2: a.b holds a weight; the root calls
// a, a calls a.b then runs a relu, a.b runs a linear reading its weight.
nlohmann::json TracedDoc() {
  nlohmann::json doc = nlohmann::json::parse(semmap_test::ManifestJson({"a", "a.b"}));
  doc["schema_version"] = 2;
  doc["modules"][2]["parameters"] = {{{"name", "weight"}, {"shape", {2, 2}}, {"dtype", "float32"}}};
  doc["modules"][0]["forward"] = {{{"call", "a"}}};
  doc["modules"][1]["forward"] = {{{"call", "a.b"}}, {{"op", "relu"}}};
  doc["modules"][2]["forward"] = {{{"op", "linear"}, {"reads", {"weight"}}}};
  return doc;
}

std::string EditedTraced(const std::string& pointer, const nlohmann::json& value) {
  nlohmann::json doc = TracedDoc();
  doc[nlohmann::json::json_pointer(pointer)] = value;
  return doc.dump();
}

// `text` with its first "@" replaced by `raw` (bytes JSON cannot carry).
std::string WithRawBytes(std::string text, const std::string& raw) {
  return text.replace(text.find('@'), 1, raw);
}

// A manifest from (path, parent, children) triples, every class "M".
std::string ManifestOf(const std::vector<std::tuple<std::string, nlohmann::json, nlohmann::json>>&
                           modules) {
  nlohmann::json doc = {{"format", "semmap.manifest"},
                        {"schema_version", 1},
                        {"model", {{"class", "M"}, {"qualified_class", "t.M"}}},
                        {"modules", nlohmann::json::array()}};
  for (const auto& [path, parent, children] : modules) {
    doc["modules"].push_back({{"path", path},
                              {"class", "M"},
                              {"qualified_class", "t.M"},
                              {"parent", parent},
                              {"children", children},
                              {"parameters", nlohmann::json::array()},
                              {"buffers", nlohmann::json::array()}});
  }
  return doc.dump();
}

std::vector<BadManifest> BadManifests() {
  using Code = absl::StatusCode;
  const nlohmann::json null;
  const auto none = nlohmann::json::array();
  std::vector<BadManifest> rows = {
      // Wrong types (manifest_test.cc: class as a number, a negative dim).
      {"modules is an object", Edited("/modules", nlohmann::json::object()), Code::kInvalidArgument,
       "/modules: expected an array"},
      {"model is a string", Edited("/model", "M"), Code::kInvalidArgument, "/model: expected an object"},
      {"path is a number", Edited("/modules/1/path", 5), Code::kInvalidArgument,
       "/modules/1/path: expected a string"},
      {"parent is a number", Edited("/modules/1/parent", 0), Code::kInvalidArgument,
       "/modules/1/parent: expected a string or null"},
      {"children is a string", Edited("/modules/1/children", "a.b"), Code::kInvalidArgument,
       "/modules/1/children: expected an array"},
      {"a child is a number", Edited("/modules/0/children/0", 1), Code::kInvalidArgument,
       "/modules/0/children/0: expected a string"},
      {"parameters is an object", Edited("/modules/1/parameters", nlohmann::json::object()),
       Code::kInvalidArgument, "/modules/1/parameters: expected an array"},
      {"a parameter is a string", Edited("/modules/1/parameters", {"w"}), Code::kInvalidArgument,
       "/modules/1/parameters/0: expected an object"},
      {"a shape is a number",
       Edited("/modules/1/parameters", {{{"name", "w"}, {"shape", 3}, {"dtype", "float32"}}}),
       Code::kInvalidArgument, "/modules/1/parameters/0/shape: expected an array"},
      {"a dim is fractional",
       Edited("/modules/1/buffers", {{{"name", "w"}, {"shape", {1.5}}, {"dtype", "float32"}}}),
       Code::kInvalidArgument, "/modules/1/buffers/0/shape/0: expected a non-negative integer"},
      {"schema_version is a string", Edited("/schema_version", "1"), Code::kInvalidArgument,
       "/schema_version: missing or not an integer"},
      {"schema_version is fractional", Edited("/schema_version", 1.0), Code::kInvalidArgument,
       "/schema_version"},
      {"format is a number", Edited("/format", 1), Code::kInvalidArgument, "not a semmap manifest"},
      {"an empty class", Edited("/modules/1/class", ""), Code::kInvalidArgument,
       "/modules/1/class: must not be empty"},
      // Missing fields (manifest_test.cc: no modules at all).
      {"no path", Removed("/modules/1/path"), Code::kInvalidArgument,
       "/modules/1: missing required field \"path\""},
      {"no class", Removed("/modules/2/class"), Code::kInvalidArgument,
       "/modules/2: missing required field \"class\""},
      {"no qualified_class", Removed("/modules/1/qualified_class"), Code::kInvalidArgument,
       "missing required field \"qualified_class\""},
      {"no parent", Removed("/modules/1/parent"), Code::kInvalidArgument,
       "missing required field \"parent\""},
      {"no children", Removed("/modules/0/children"), Code::kInvalidArgument,
       "/modules/0: missing required field \"children\""},
      {"no parameters", Removed("/modules/1/parameters"), Code::kInvalidArgument,
       "missing required field \"parameters\""},
      {"no buffers", Removed("/modules/1/buffers"), Code::kInvalidArgument,
       "missing required field \"buffers\""},
      {"no model", Removed("/model"), Code::kInvalidArgument, "missing required field \"model\""},
      {"no model class", Removed("/model/class"), Code::kInvalidArgument,
       "/model: missing required field \"class\""},
      {"no schema_version", Removed("/schema_version"), Code::kInvalidArgument, "/schema_version"},
      {"empty modules", Edited("/modules", none), Code::kInvalidArgument, "at least the root"},
      // Unknown versions (manifest_test.cc: 99).
      {"version 0", Edited("/schema_version", 0), Code::kFailedPrecondition, "schema version 0"},
      {"version 3", Edited("/schema_version", 3), Code::kFailedPrecondition, "schema version 3"},
      {"version -1", Edited("/schema_version", -1), Code::kFailedPrecondition, "schema version -1"},
      {"version 2^32 + 1 (wraps to 1 as an int)", Edited("/schema_version", 4294967297LL),
       Code::kFailedPrecondition, "schema version 4294967297"},
      // Cyclic and inconsistent links (manifest_test.cc: a two-module cycle).
      {"a module is its own parent",
       ManifestOf({{"", null, {"a"}}, {"a", "a", {"a"}}}), Code::kInvalidArgument,
       "/modules/1/parent: a parent must be listed before its children"},
      {"a three-module cycle",
       ManifestOf({{"", null, none}, {"a", "c", {"b"}}, {"b", "a", {"c"}}, {"c", "b", {"a"}}}),
       Code::kInvalidArgument, "/modules/1/parent"},
      {"a parent that does not exist", ManifestOf({{"", null, none}, {"a", "zz", none}}),
       Code::kInvalidArgument, "/modules/1/parent: unknown module \"zz\""},
      {"a child that does not exist", ManifestOf({{"", null, {"zz"}}}), Code::kInvalidArgument,
       "/modules/0/children/0: unknown module \"zz\""},
      {"a second root", ManifestOf({{"", null, none}, {"x", null, none}}), Code::kInvalidArgument,
       "/modules/1/parent: only the root"},
      // Duplicates (manifest_test.cc: a path listed twice).
      {"the root listed twice", ManifestOf({{"", null, none}, {"", "", none}}),
       Code::kInvalidArgument, "/modules/1/path: duplicate module path \"\""},
      {"a child listed twice", ManifestOf({{"", null, {"a", "a"}}, {"a", "", none}}),
       Code::kInvalidArgument, "/modules/0/children/1: child \"a\" is listed twice"},
      // What the schema forbids, refused as it does (item 5 of the fourth
      // audit; tests/tool/check_manifest_schema.py runs the JSON Schema on the
      // same kinds of file).
      {"an unknown module field", Edited("/modules/1/future_field", {{"x", 1}}),
       Code::kInvalidArgument, "/modules/1/future_field: unknown field \"future_field\""},
      {"an unknown tensor field", EditedTraced("/modules/2/parameters/0/grad", true),
       Code::kInvalidArgument, "/modules/2/parameters/0/grad: unknown field"},
      {"an unknown event field", EditedTraced("/modules/2/forward/0/time", 1),
       Code::kInvalidArgument, "/modules/2/forward/0/time: unknown field"},
      {"a generator version that is a number", Edited("/generator", {{"torch", 2}}),
       Code::kInvalidArgument, "/generator/torch: expected a string"},
      {"a config value that is a list", Edited("/model/config", {{"sizes", {1, 2}}}),
       Code::kInvalidArgument, "/model/config/sizes: expected a string, number, boolean or null"},
      {"a model_type that is a number", Edited("/model/model_type", 5), Code::kInvalidArgument,
       "/model/model_type: expected a string or null"},
      {"10,001 events on one module",
       EditedTraced("/modules/1/forward", std::vector<nlohmann::json>(10001, {{"op", "add"}})),
       Code::kInvalidArgument, "/modules/1/forward: 10001 events, above the schema's limit of 10000"},
      {"reads on a call", EditedTraced("/modules/1/forward/0", {{"call", "a.b"}, {"reads", {"weight"}}}),
       Code::kInvalidArgument, "/modules/1/forward/0/reads: \"reads\" goes with an \"op\""},
      {"reads of numbers on a call", EditedTraced("/modules/1/forward/0", {{"call", "a.b"}, {"reads", {1}}}),
       Code::kInvalidArgument, "/modules/1/forward/0/reads: \"reads\" goes with an \"op\""},
      {"a name read that is no tensor of the module",
       EditedTraced("/modules/2/forward/0/reads", {"weight", "bias"}), Code::kInvalidArgument,
       "/modules/2/forward/0/reads/1: \"bias\" is not a parameter or buffer of this module"},
      {"a name read twice", EditedTraced("/modules/2/forward/0/reads", {"weight", "weight"}),
       Code::kInvalidArgument, "/modules/2/forward/0/reads/1: \"weight\" is listed twice"},
      {"reads empty", EditedTraced("/modules/2/forward/0/reads", none), Code::kInvalidArgument,
       "/modules/2/forward/0/reads: must not be empty"},
      {"version 2 without any forward", Edited("/schema_version", 2), Code::kInvalidArgument,
       "/schema_version: version 2 needs a \"forward\" on at least one module"},
      {"a forward in a version-1 file", EditedTraced("/schema_version", 1), Code::kInvalidArgument,
       "/modules/0/forward: a forward signature needs schema_version 2"},
      {"a module calling itself", EditedTraced("/modules/2/forward/0", {{"call", "a.b"}}),
       Code::kInvalidArgument, "/modules/2/forward/0/call: a module cannot call itself"},
      {"a module calling the root", EditedTraced("/modules/1/forward/1", {{"call", ""}}),
       Code::kInvalidArgument, "/modules/1/forward/1/call: no module calls the root"},
      {"a cycle of calls", EditedTraced("/modules/2/forward/0", {{"call", "a"}}),
       Code::kInvalidArgument, "/modules/2/forward/0/call: calls \"a\", which is already being called"},
      // Not JSON at all (manifest_test.cc: binary, cut JSON, an array).
      {"non-UTF-8 in a string", WithRawBytes(Edited("/modules/1/path", "@"), "a\xff\xfe"),
       Code::kInvalidArgument, "not valid JSON"},
      {"a NUL byte inside the text", std::string("{\"format\"\0:1}", 13), Code::kInvalidArgument,
       "not valid JSON"},
      {"10^5 nested arrays", std::string(100000, '[') + std::string(100000, ']'),
       Code::kInvalidArgument, "JSON nested deeper than 256 levels"},
      {"a 10^6-digit number", "{\"format\":" + std::string(1000000, '9') + "}",
       Code::kInvalidArgument, "number overflow"},
      {"a 10^6-byte string never closed", "{\"format\":\"" + std::string(1000000, 'x'),
       Code::kInvalidArgument, "not valid JSON"},
  };
  return rows;
}

}  // namespace

TEST_CASE("Catalogue: broken manifests fail with the file, the pointer and the cause",
          "[catalogue][manifest]") {
  static const std::vector<BadManifest> rows = BadManifests();
  const BadManifest& row = GENERATE(from_range(rows));
  CAPTURE(row.what);
  HangGuard guard;
  auto m = Manifest::Parse(row.text, "bad.json");
  CheckError(m.status(), row.code, "bad.json", row.fragment);
}

TEST_CASE("Catalogue: manifest limits and tolerated oddities", "[catalogue][manifest]") {
  HangGuard guard;
  SECTION("more modules than max_modules") {
    semmap::ManifestOptions options;
    options.max_modules = 2;
    auto m = Manifest::Parse(semmap_test::ManifestJson({"a", "a.b"}), "big.json", options);
    CheckError(m.status(), absl::StatusCode::kInvalidArgument, "big.json",
               "3 modules, above the limit of 2");
  }
  SECTION("a file above max_file_bytes") {
    TempDir tmp;
    const std::string path = tmp.file("big.json");
    WriteBytes(path, semmap_test::ManifestJson({"a"}));
    semmap::ManifestOptions options;
    options.max_file_bytes = 10;
    CheckError(Manifest::Load(path, options).status(), absl::StatusCode::kInvalidArgument, path,
               "above the limit of 10 bytes");
  }
  SECTION("unknown fields are ignored where the schema allows them") {
    // At the top level and in "model"; a module's are refused (above).
    auto m = Manifest::Parse(Edited("/future_field", {{"x", 1}}), "extra.json");
    REQUIRE(m.ok());
    CHECK(m->size() == 3);
    CHECK(Manifest::Parse(Edited("/model/future_field", {1, 2}), "extra.json").ok());
    auto traced = Manifest::Parse(TracedDoc().dump(), "traced.json");
    REQUIRE(traced.ok());
    CHECK(traced->module(2).forward.front().reads == std::vector<absl::string_view>{"weight"});
  }
  SECTION("10^5 modules under one parent load in linear time") {
    // Checking each module against its parent's children list was
    // quadratic here (5 * 10^9 comparisons).
    std::string text = R"({"format":"semmap.manifest","schema_version":1,)"
                       R"("model":{"class":"M","qualified_class":"t.M"},"modules":[)";
    std::string children;
    std::string modules;
    for (int i = 0; i < 100000; ++i) {
      const std::string path = "m" + std::to_string(i);
      children += (i ? ",\"" : "\"") + path + "\"";
      modules += R"(,{"path":")" + path +
                 R"(","class":"M","qualified_class":"t.M","parent":"","children":[],)"
                 R"("parameters":[],"buffers":[]})";
    }
    text += R"({"path":"","class":"M","qualified_class":"t.M","parent":null,"children":[)" +
            children + R"(],"parameters":[],"buffers":[]})" + modules + "]}";
    HangGuard inner;
    auto m = Manifest::Parse(text, "flat.json");
    REQUIRE(m.ok());
    CHECK(m->module(0).children.size() == 100000);
  }
  SECTION("a chain of modules 1000 deep loads in time") {
    std::vector<std::string> paths;
    std::string path;
    for (int i = 0; i < 1000; ++i) {  // depth 1000, paths up to 2 KB
      path += path.empty() ? "m" : ".m";
      paths.push_back(path);
    }
    auto m = Manifest::Parse(semmap_test::ManifestJson(paths), "chain.json");
    REQUIRE(m.ok());
    CHECK(m->module(m->find(path)).depth == 1000);
    CHECK(m->lowestCommonAncestor(m->find(path), 1) == 1);
  }
}

// --- Rule files -----------------------------------------------------------

namespace {

std::string RulesWith(const std::string& body) {
  return R"({"format":"semmap.rules","version":1)" + (body.empty() ? "" : "," + body) + "}";
}

std::string PatternRule(const std::string& pattern) {
  return RulesWith(R"("derived_node_names":[{"pattern":)" + nlohmann::json(pattern).dump() + "}]");
}

struct BadRules {
  std::string what;
  std::string text;
  absl::StatusCode code;
  std::string fragment;
};

std::vector<BadRules> BadRuleFiles() {
  using Code = absl::StatusCode;
  // rules_test.cc: not JSON, another format, version 9, an unclosed group, an
  // empty pattern, a list given as an object, a category without a
  // matcher, nested counted repetition.
  return {
      {"format is a number", R"({"format":5,"version":1})", Code::kInvalidArgument,
       "/format: not a semmap rule file"},
      {"format is null", R"({"format":null})", Code::kInvalidArgument, "/format"},
      {"version is a string", R"({"format":"semmap.rules","version":"1"})",
       Code::kFailedPrecondition, "/version"},
      {"repeated_child is a string",
       RulesWith(R"("categories":[{"category":"x","repeated_child":"yes"}])"),
       Code::kInvalidArgument, "/categories/0/repeated_child: expected true or false"},
      {"a pattern is a number", RulesWith(R"("follow_consumers_ops":{"pattern":7})"),
       Code::kInvalidArgument, "/follow_consumers_ops/pattern: expected a pattern string"},
      {"a 4097-byte pattern", PatternRule(std::string(4097, 'a')), Code::kInvalidArgument,
       "pattern must be 1 to 4096 bytes"},
      {"a backreference", PatternRule(R"((a)\1)"), Code::kInvalidArgument, "invalid pattern"},
      {"a lookahead", PatternRule("(?=a)b"), Code::kInvalidArgument, "invalid pattern"},
      {"a repeat above 1000", PatternRule("a{1001}"), Code::kInvalidArgument, "invalid pattern"},
      {"nested repeats multiplying past 1000", PatternRule("((a{100}){100}){100}"),
       Code::kInvalidArgument, "invalid pattern"},
      {"a program above the memory budget", PatternRule("\\pL{1000}"),
       Code::kInvalidArgument, "invalid pattern"},
      {"invalid UTF-8 in a pattern", "{\"format\":\"semmap.rules\",\"version\":1,"
                                     "\"derived_node_names\":[{\"pattern\":\"\xff\"}]}",
       Code::kInvalidArgument, "not valid JSON"},
      {"65 levels of nesting", std::string(65, '[') + std::string(65, ']'),
       Code::kInvalidArgument, "nested deeper than 64"},
      {"empty text", "", Code::kInvalidArgument, "not valid JSON"},
  };
}

}  // namespace

TEST_CASE("Catalogue: broken rule files fail with the file, the pointer and the cause",
          "[catalogue][rules]") {
  static const std::vector<BadRules> rows = BadRuleFiles();
  const BadRules& row = GENERATE(from_range(rows));
  CAPTURE(row.what);
  HangGuard guard;
  auto rules = Rules::Parse(row.text, "bad_rules.json");
  CheckError(rules.status(), row.code, "bad_rules.json", row.fragment);
}

TEST_CASE("Catalogue: rule files are budgeted as a whole, not only per pattern",
          "[catalogue][rules]") {
  HangGuard guard;  // 5,000 copies of one large pattern once took 240 s and 2.6 GB
  std::string entries;
  for (int i = 0; i < 5000; ++i) absl::StrAppend(&entries, i ? "," : "", R"({"pattern":"\\pL{55}"})");
  auto rules = Rules::Parse(RulesWith(absl::StrCat(R"("derived_node_names":[)", entries, "]")),
                            "many.json");
  CheckError(rules.status(), absl::StatusCode::kInvalidArgument, "many.json", "together");
}

TEST_CASE("Catalogue: pathological patterns that compile match in linear time",
          "[catalogue][rules]") {
  const std::string pattern =
      GENERATE(std::string("(a*)*b"), std::string("(a|aa)*c"), std::string("(x+x+)+y"),
               std::string("^(\\w+\\s?)*$"), std::string("(.*a){20}"), std::string("\\C*z"));
  CAPTURE(pattern);
  auto rules = Rules::Parse(PatternRule(pattern), "slow.json");
  REQUIRE(rules.ok());
  const std::string subject(1 << 20, 'a');  // a 1 MB node name of the worst letter
  HangGuard guard;
  for (int i = 0; i < 4; ++i) (void)semmap::internal::RuleQueries(*rules).IsDerivedNodeName(subject);
  CHECK(semmap::internal::RuleQueries(*rules).StripValueSuffixes(subject) == subject);
}
