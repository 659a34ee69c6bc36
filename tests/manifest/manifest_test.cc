#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "catch2/catch.hpp"
#include "manifest/manifest_reader.h"
#include "semmap/manifest.h"
#include "test_util.h"

using semmap::Manifest;
using semmap_test::Fixture;
using semmap_test::ManifestJson;

TEST_CASE("A real manifest loads and indexes every module", "[manifest]") {
  const std::string path = Fixture("bert-seqcls.torchscript", "manifest.json");
  auto m = Manifest::Load(path);
  REQUIRE(m.ok());
  CHECK(m->schemaVersion() == 2);
  CHECK(m->modelClass() == "BertForSequenceClassification");
  CHECK(m->modelType() == "bert");
  CHECK(m->module(m->root()).path.empty());

  const semmap::ModuleId q = m->find("bert.encoder.layer.0.attention.self.query");
  REQUIRE(q != semmap::kNoModule);
  const semmap::ModuleInfo& query = m->module(q);
  CHECK(query.class_name == "Linear");
  CHECK(query.qualified_class == "torch.nn.modules.linear.Linear");
  CHECK(m->module(query.parent).path == "bert.encoder.layer.0.attention.self");
  CHECK(query.variable_name == "query");
  REQUIRE(query.parameters.size() == 2);
  CHECK(query.parameters[0].name == "weight");
  CHECK(query.parameters[0].shape.size() == 2);
  CHECK(query.parameters[0].dtype == "float32");

  const semmap::ModuleId layer0 = m->find("bert.encoder.layer.0");
  REQUIRE(layer0 != semmap::kNoModule);
  CHECK(m->module(layer0).variable_name == "layer.0");
  CHECK(m->module(layer0).class_name == "BertLayer");
  CHECK(m->ownerOfTensor("bert.encoder.layer.0.attention.self.query.bias") == q);
  CHECK(m->ownerOfTensor("bert.encoder.layer.0.attention.self.query") == semmap::kNoModule);
  CHECK(m->isAncestorOrSelf(layer0, q));
  CHECK_FALSE(m->isAncestorOrSelf(q, layer0));
  CHECK(m->lowestCommonAncestor(q, m->find("bert.encoder.layer.0.output.dense")) == layer0);
  // Forward signatures: the query's linear reads its weight and bias; the
  // attention output calls its dense layer, adds the residual, then calls
  // its LayerNorm.
  REQUIRE(query.traced);
  REQUIRE(query.forward.size() == 1);
  CHECK(query.forward[0].op == "linear");
  CHECK(query.forward[0].reads == std::vector<absl::string_view>{"weight", "bias"});
  const semmap::ModuleInfo& output = m->module(m->find("bert.encoder.layer.0.attention.output"));
  std::vector<std::string> events;
  for (const semmap::ForwardEvent& e : output.forward) {
    events.push_back(e.call != semmap::kNoModule ? absl::StrCat("call ", m->module(e.call).path)
                                                : std::string(e.op));
  }
  CHECK(events == std::vector<std::string>{"call bert.encoder.layer.0.attention.output.dense",
                                           "call bert.encoder.layer.0.attention.output.dropout",
                                           "add",
                                           "call bert.encoder.layer.0.attention.output.LayerNorm"});
  CHECK(m->find("no.such.module") == semmap::kNoModule);
}

TEST_CASE("VariableNameOf keeps trailing numeric atoms", "[manifest]") {
  auto row = GENERATE(table<std::string, std::string>({
      {"encoder.layer.0", "layer.0"},
      {"layer1.0", "layer1.0"},
      {"blocks.0.1", "blocks.0.1"},
      {"model.layers.3.mlp", "mlp"},
      {"0", "0"},
      {"0.1", "0.1"},
      {"", ""},
  }));
  CAPTURE(std::get<0>(row));
  CHECK(semmap::VariableNameOf(std::get<0>(row)) == std::get<1>(row));
}

TEST_CASE("Bad manifests give statuses naming the file and the cause", "[manifest]") {
  const std::string good = ManifestJson({"a", "a.b"});
  REQUIRE(Manifest::Parse(good, "m.json").ok());

  auto row = GENERATE_COPY(table<std::string, absl::StatusCode, std::string>({
      {"", absl::StatusCode::kInvalidArgument, "empty file"},
      {"\x89PNG\r\n\x1a\n garbage", absl::StatusCode::kInvalidArgument, "not valid JSON"},
      {"{\"format\": ", absl::StatusCode::kInvalidArgument, "not valid JSON"},
      {"[1,2,3]", absl::StatusCode::kInvalidArgument, "expected a JSON object"},
      {"{\"nodes\": {}}", absl::StatusCode::kInvalidArgument, "not a semmap manifest"},
      {R"({"format":"semmap.manifest","schema_version":99,"model":{},"modules":[]})",
       absl::StatusCode::kFailedPrecondition, "schema version 99"},
      {R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"}})",
       absl::StatusCode::kInvalidArgument, "missing required field \"modules\""},
      {R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[{"path":"","class":5,"qualified_class":"q","parent":null,"children":[],"parameters":[],"buffers":[]}]})",
       absl::StatusCode::kInvalidArgument, "/modules/0/class: expected a string"},
      {R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[{"path":"","class":"M","qualified_class":"q","parent":null,"children":[],"parameters":[{"name":"w","shape":[-1],"dtype":"f"}],"buffers":[]}]})",
       absl::StatusCode::kInvalidArgument, "/modules/0/parameters/0/shape/0"},
      {R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[{"path":"","class":"M","qualified_class":"q","parent":null,"children":["a"],"parameters":[],"buffers":[]},{"path":"a","class":"M","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]},{"path":"a","class":"M","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]}]})",
       absl::StatusCode::kInvalidArgument, "duplicate module path \"a\""},
      {R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[{"path":"","class":"M","qualified_class":"q","parent":null,"children":["b"],"parameters":[],"buffers":[]},{"path":"a","class":"M","qualified_class":"q","parent":"b","children":[],"parameters":[],"buffers":[]},{"path":"b","class":"M","qualified_class":"q","parent":"a","children":["a"],"parameters":[],"buffers":[]}]})",
       absl::StatusCode::kInvalidArgument, "cyclic or out-of-order parents"},
      {R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[{"path":"","class":"M","qualified_class":"q","parent":null,"children":[],"parameters":[],"buffers":[]},{"path":"a","class":"M","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]}]})",
       absl::StatusCode::kInvalidArgument, "parent does not list this module"},
      {R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[{"path":"x","class":"M","qualified_class":"q","parent":null,"children":[],"parameters":[],"buffers":[]}]})",
       absl::StatusCode::kInvalidArgument, "only the root (the first module, path \"\") has no parent"},
      {std::string(100000, '['), absl::StatusCode::kInvalidArgument, "nested deeper"},
  }));
  const std::string& text = std::get<0>(row);
  CAPTURE(text.substr(0, 200));
  auto m = Manifest::Parse(text, "bad.json");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == std::get<1>(row));
  const std::string message(m.status().message());
  CAPTURE(message);
  CHECK(message.rfind("bad.json", 0) == 0);
  CHECK(message.find(std::get<2>(row)) != std::string::npos);
}

TEST_CASE("Missing and unreadable manifest files", "[manifest]") {
  auto missing = Manifest::Load("/nonexistent/dir/manifest.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.status().message()).find("/nonexistent/dir/manifest.json") !=
        std::string::npos);

  auto dir = Manifest::Load(SEMMAP_FIXTURES_DIR);
  REQUIRE_FALSE(dir.ok());
  CHECK(std::string(dir.status().message()).find("is a directory") != std::string::npos);

  semmap::ManifestOptions small;
  small.max_file_bytes = 10;
  auto big = Manifest::Load(Fixture("bert-seqcls.torchscript", "manifest.json"), small);
  REQUIRE_FALSE(big.ok());
  CHECK(std::string(big.status().message()).find("above the limit") != std::string::npos);
}

TEST_CASE("FromModulePaths builds the ancestors and keeps classes", "[manifest]") {
  const Manifest m = Manifest::FromModulePaths(
      {{"a.b.c", "pkg.C"}, {"a.d", ""}, {"", "pkg.Root"}});
  CHECK(m.size() == 5);
  REQUIRE(m.find("a.b") != semmap::kNoModule);
  CHECK(m.module(m.find("a.b.c")).class_name == "C");
  CHECK(m.module(m.find("a.b.c")).qualified_class == "pkg.C");
  CHECK(m.module(m.find("a.d")).class_name.empty());
  CHECK(m.module(0).class_name == "Root");
  CHECK(m.module(m.find("a.b")).parent == m.find("a"));
}

TEST_CASE("Module views, copies and the lookups of the compact manifest", "[manifest]") {
  const std::string path = Fixture("bert-seqcls.torchscript", "manifest.json");
  auto loaded = Manifest::Load(path);
  REQUIRE(loaded.ok());
  const Manifest& m = *loaded;
  // Every module's path, children and tensors as views; a copy shares them.
  const Manifest copy = m;
  REQUIRE(copy.size() == m.size());
  std::size_t listed = 0;
  for (const semmap::ModuleInfo& info : m.modules()) {
    const semmap::ModuleId id = m.find(info.path);
    REQUIRE(id != semmap::kNoModule);
    CHECK(copy.module(id).path.data() == info.path.data());
    CHECK(m.path(id) == info.path);
    CHECK(m.parent(id) == info.parent);
    CHECK(m.depth(id) == info.depth);
    CHECK(m.children(id).size() == info.children.size());
    listed += info.children.size();
    for (semmap::ModuleId c : info.children) {
      CHECK(m.parent(c) == id);
      // The child's last atom finds it under its parent, scanned or hashed.
      const absl::string_view child = m.path(c);
      const absl::string_view atom = child.substr(info.path.empty() ? 0 : info.path.size() + 1);
      CHECK(m.findChild(id, atom) == c);
    }
    for (const semmap::TensorSpec& t : info.parameters) {
      CHECK(m.ownerOfTensor(info.path.empty() ? std::string(t.name)
                                              : absl::StrCat(info.path, ".", t.name)) == id);
    }
  }
  CHECK(listed + 1 == m.size());  // every module but the root is someone's child
  const semmap::ModuleId layer = m.find("bert.encoder.layer");
  REQUIRE(layer != semmap::kNoModule);
  CHECK(m.module(layer).numbered_children);
  CHECK_FALSE(m.module(m.find("bert.encoder")).numbered_children);
  // A name with a dot is a grandchild's path, found through the table.
  CHECK(m.findChild(m.find("bert.encoder"), "layer.1") == m.find("bert.encoder.layer.1"));
  CHECK(m.findChild(layer, "99") == semmap::kNoModule);
  CHECK(m.findChild(m.root(), "bert") == m.find("bert"));
  // Every layer's query shares one variable name, in manifest order.
  const absl::Span<const semmap::ModuleId> queries = m.withVariableName("query");
  REQUIRE(queries.size() >= 2);
  CHECK(std::is_sorted(queries.begin(), queries.end()));
  for (semmap::ModuleId q : queries) CHECK(m.module(q).variable_name == "query");
  CHECK(m.withVariableName("no_such_name").empty());
}

TEST_CASE("A tensor name holding a dot is owned by the first module it can name", "[manifest]") {
  // Torch never names an attribute with a dot; another writer might. Then
  // "a.b.c" could be a's "b.c" or a.b's "c": the module listed first, a.
  const std::string json =
      R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[)"
      R"({"path":"","class":"M","qualified_class":"t.M","parent":null,"children":["a"],"parameters":[],"buffers":[]},)"
      R"({"path":"a","class":"A","qualified_class":"t.A","parent":"","children":["a.b"],"parameters":[{"name":"b.c","shape":[2],"dtype":"float32"}],"buffers":[]},)"
      R"({"path":"a.b","class":"B","qualified_class":"t.B","parent":"a","children":[],"parameters":[{"name":"c","shape":[2],"dtype":"float32"},{"name":"d","shape":[3],"dtype":"float32"}],"buffers":[]}]})";
  auto m = Manifest::Parse(json, "dotted.json");
  REQUIRE(m.ok());
  CHECK(m->ownerOfTensor("a.b.c") == m->find("a"));
  CHECK(m->ownerOfTensor("a.b.d") == m->find("a.b"));
  CHECK(m->ownerOfTensor("a.b.e") == semmap::kNoModule);
  CHECK(m->ownerOfTensor("c") == semmap::kNoModule);
  CHECK(m->module(m->find("a.b")).parameters[1].shape == std::vector<std::int64_t>{3});
}

TEST_CASE("Modules with many tensors are looked up and checked by hash", "[manifest]") {
  // 40 parameters (above the lists searched one by one), one op reading
  // them all; then the same op reading one twice, and one it lacks.
  const auto manifest = [](const std::string& extra_read) {
    std::string params, reads;
    for (int k = 0; k < 40; ++k) {
      if (k > 0) params += ",", reads += ",";
      params += R"({"name":"p)" + std::to_string(k) + R"(","shape":[2],"dtype":"float32"})";
      reads += "\"p" + std::to_string(k) + "\"";
    }
    return R"({"format":"semmap.manifest","schema_version":2,"model":{"class":"M","qualified_class":"t.M"},"modules":[)"
           R"({"path":"","class":"M","qualified_class":"t.M","parent":null,"children":["big"],"parameters":[],"buffers":[]},)"
           R"({"path":"big","class":"B","qualified_class":"t.B","parent":"","children":[],"parameters":[)" +
           params + R"(],"buffers":[],"forward":[{"op":"cat","reads":[)" + reads + extra_read +
           "]}]}]}";
  };
  auto m = Manifest::Parse(manifest(""), "big.json");
  REQUIRE(m.ok());
  const semmap::ModuleId big = m->find("big");
  CHECK(m->module(big).forward[0].reads.size() == 40);
  CHECK(m->ownerOfTensor("big.p0") == big);
  CHECK(m->ownerOfTensor("big.p39") == big);
  CHECK(m->ownerOfTensor("big.p40") == semmap::kNoModule);
  CHECK(m->ownerOfTensor("p0") == semmap::kNoModule);
  auto twice = Manifest::Parse(manifest(R"(,"p25")"), "twice.json");
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(std::string(twice.status().message()), Catch::Contains("\"p25\" is listed twice"));
  auto lacking = Manifest::Parse(manifest(R"(,"q")"), "lacking.json");
  REQUIRE_FALSE(lacking.ok());
  CHECK_THAT(std::string(lacking.status().message()),
             Catch::Contains("\"q\" is not a parameter or buffer of this module"));
}

namespace {

// A two-module manifest of `version` whose root's entry ends with `forward`.
std::string WithForward(int version, const std::string& forward) {
  return R"({"format":"semmap.manifest","schema_version":)" + std::to_string(version) +
         R"(,"model":{"class":"M","qualified_class":"t.M"},"modules":[)"
         R"({"path":"","class":"M","qualified_class":"t.M","parent":null,"children":["a"],"parameters":[{"name":"w","shape":[2],"dtype":"float32"}],"buffers":[],"forward":)" +
         forward +
         R"(},{"path":"a","class":"L","qualified_class":"t.L","parent":"","children":[],"parameters":[],"buffers":[]}]})";
}

}  // namespace

TEST_CASE("Schema version 2 reads each module's forward events", "[manifest]") {
  const std::string forward =
      R"([{"op":"mul","reads":["w"]},{"call":"a"},{"op":"add"},{"call":"a"}])";
  auto m = Manifest::Parse(WithForward(2, forward), "v2.json");
  REQUIRE(m.ok());
  CHECK(m->schemaVersion() == 2);
  const semmap::ModuleInfo& root = m->module(m->root());
  CHECK(root.traced);
  REQUIRE(root.forward.size() == 4);
  CHECK(root.forward[0].op == "mul");
  CHECK(root.forward[0].call == semmap::kNoModule);
  CHECK(root.forward[0].reads == std::vector<absl::string_view>{"w"});
  CHECK(root.forward[1].call == m->find("a"));
  CHECK(root.forward[1].op.empty());
  CHECK(root.forward[2].op == "add");
  CHECK(root.forward[2].reads.empty());
  CHECK(root.forward[3].call == m->find("a"));
  // A module without the field was not traced.
  CHECK_FALSE(m->module(m->find("a")).traced);
  // An empty forward ran and did nothing.
  auto empty = Manifest::Parse(WithForward(2, "[]"), "v2.json");
  REQUIRE(empty.ok());
  CHECK(empty->module(0).traced);
  CHECK(empty->module(0).forward.empty());
  // Copies keep the events and their callees.
  const Manifest copy = *m;
  CHECK(copy.module(0).forward[1].call == copy.find("a"));
}

TEST_CASE("A version 1 manifest with a forward field is refused", "[manifest]") {
  // Its schema forbids the field; it used to be dropped without a word.
  auto m = Manifest::Parse(WithForward(1, R"([{"op":"add"}])"), "v1.json");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(m.status().message()).find(
            "v1.json: /modules/0/forward: a forward signature needs schema_version 2") == 0);
}

TEST_CASE("Bad forward events name the file and the event", "[manifest]") {
  auto row = GENERATE(table<std::string, std::string>({
      {R"([{"call":"nowhere"}])", "/modules/0/forward/0/call: unknown module \"nowhere\""},
      {R"([{"op":"add"},{"call":"a","op":"add"}])", "exactly one of \"call\" and \"op\""},
      {R"([{}])", "exactly one of \"call\" and \"op\""},
      {R"([{"op":""}])", "/modules/0/forward/0/op"},
      {R"([{"op":"mul","reads":"w"}])", "/modules/0/forward/0/reads: expected an array"},
      {R"([{"op":"mul","reads":[1]}])", "/modules/0/forward/0/reads/0"},
      {R"({"op":"add"})", "/modules/0/forward: expected an array"},
      {R"([3])", "/modules/0/forward/0: expected an object"},
  }));
  CAPTURE(std::get<0>(row));
  auto m = Manifest::Parse(WithForward(2, std::get<0>(row)), "bad.json");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
  const std::string message(m.status().message());
  CAPTURE(message);
  CHECK(message.rfind("bad.json: ", 0) == 0);
  CHECK(message.find(std::get<1>(row)) != std::string::npos);
}

TEST_CASE("findTensor gives a module's tensor by local name, searched or hashed", "[manifest]") {
  // A module of 3 tensors (searched) and one of 40 (hashed); a name given
  // twice, as a parameter and as a buffer, is the parameter, listed first.
  for (const int count : {3, 40}) {
    CAPTURE(count);
    std::string params, buffers;
    for (int i = 0; i < count; ++i) {
      absl::StrAppend(&params, i ? "," : "", R"({"name":"p)", i, R"(","shape":[)", i + 1,
                      R"(],"dtype":"float32"})");
      absl::StrAppend(&buffers, i ? "," : "", R"({"name":"b)", i, R"(","shape":[2],"dtype":"int64"})");
    }
    absl::StrAppend(&buffers, R"(,{"name":"p0","shape":[9],"dtype":"int64"})");
    const std::string json = absl::StrCat(
        R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},)",
        R"("modules":[{"path":"","class":"M","qualified_class":"t.M","parent":null,"children":["m"],)",
        R"("parameters":[],"buffers":[]},{"path":"m","class":"C","qualified_class":"t.C","parent":"",)",
        R"("children":[],"parameters":[)", params, R"(],"buffers":[)", buffers, "]}]}");
    auto m = Manifest::Parse(json, "tensors.json");
    REQUIRE(m.ok());
    const semmap::ModuleId mod = m->find("m");
    for (int i = 0; i < count; ++i) {
      const semmap::TensorSpec* p = m->findTensor(mod, absl::StrCat("p", i));
      REQUIRE(p != nullptr);
      CHECK(p->shape.size() == 1);
      CHECK(p->shape[0] == i + 1);  // the parameter, not the buffer "p0"
      const semmap::TensorSpec* b = m->findTensor(mod, absl::StrCat("b", i));
      REQUIRE(b != nullptr);
      CHECK(b->dtype == "int64");
    }
    CHECK(m->findTensor(mod, "p") == nullptr);
    CHECK(m->findTensor(mod, absl::StrCat("p", count)) == nullptr);
    CHECK(m->findTensor(m->root(), "p0") == nullptr);
  }
}

namespace {

using Way = semmap::internal::ManifestReader::Way;

absl::StatusOr<Manifest> ReadAs(const std::string& text, Way way) {
  return semmap::internal::ManifestReader::Read(text, "m.json", {}, way);
}

void DumpTensors(absl::Span<const semmap::TensorSpec> tensors, std::string* out) {
  for (const semmap::TensorSpec& t : tensors) {
    absl::StrAppend(out, " [", t.name, " ", t.dtype);
    for (std::int64_t d : t.shape) absl::StrAppend(out, " ", d);
    out->append("]");
  }
}

// Everything a Manifest tells of its file, as text, to compare two readings.
std::string Dump(const Manifest& m) {
  std::string out = absl::StrCat(m.schemaVersion(), " ", m.modelClass(), " ",
                                 m.modelQualifiedClass(), " ", m.modelType(), "\n");
  for (const auto& [key, value] : m.config()) absl::StrAppend(&out, key, "=", value, "\n");
  for (std::size_t i = 0; i < m.size(); ++i) {
    const semmap::ModuleInfo info = m.module(static_cast<semmap::ModuleId>(i));
    absl::StrAppend(&out, i, " '", info.path, "' ", info.class_name, " ", info.qualified_class,
                    " parent ", info.parent, " depth ", info.depth, " var ", info.variable_name,
                    info.numbered_children ? " numbered" : "", info.traced ? " traced" : "",
                    "\n children");
    for (semmap::ModuleId c : info.children) absl::StrAppend(&out, " ", c);
    out.append("\n parameters");
    DumpTensors(info.parameters, &out);
    out.append("\n buffers");
    DumpTensors(info.buffers, &out);
    out.append("\n forward");
    for (const semmap::ForwardEvent& e : info.forward) {
      absl::StrAppend(&out, " [", e.call, " ", e.op);
      for (absl::string_view r : e.reads) absl::StrAppend(&out, " ", r);
      out.append("]");
    }
    out.append("\n");
  }
  return out;
}

// The outlined reading and the one-document reading of `text` agree: the
// same manifest (and then the outlined reading did not hand over), or the
// same error from Parse as from the one document.
void CheckReadingsAgree(const std::string& text) {
  const absl::StatusOr<Manifest> one = ReadAs(text, Way::kOneDocument);
  const absl::StatusOr<Manifest> any = ReadAs(text, Way::kAny);
  if (one.ok()) {
    const absl::StatusOr<Manifest> outlined = ReadAs(text, Way::kOutlined);
    REQUIRE(outlined.ok());
    REQUIRE(any.ok());
    CHECK(Dump(*outlined) == Dump(*one));
    CHECK(Dump(*any) == Dump(*one));
  } else {
    REQUIRE_FALSE(any.ok());
    CHECK(any.status() == one.status());
  }
}

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A schema 1 manifest of a root and its one child "a": the child written
// `child`, the rest of the file (after the modules) `after`.
std::string TwoModules(const std::string& child, const std::string& after = "") {
  return R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[{"path":"","class":"M","qualified_class":"q","parent":null,"children":["a"],"parameters":[],"buffers":[]},)" +
         child + "]" + after + "}";
}

}  // namespace

TEST_CASE("The outlined reading gives the one document's manifest on every fixture",
          "[manifest]") {
  std::size_t read = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(SEMMAP_FIXTURES_DIR)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
    const std::string text = ReadText(entry.path());
    if (text.find("\"semmap.manifest\"") == std::string::npos) continue;
    CAPTURE(entry.path().string());
    CheckReadingsAgree(text);
    if (ReadAs(text, Way::kOneDocument).ok()) ++read;
  }
  CHECK(read >= 10);
  // Load (the mapped file, its pages given back) gives the same manifest.
  const std::string path = Fixture("bert-seqcls.torchscript", "manifest.json");
  const absl::StatusOr<Manifest> loaded = Manifest::Load(path);
  REQUIRE(loaded.ok());
  CHECK(Dump(*loaded) == Dump(*ReadAs(ReadText(path), Way::kOneDocument)));
}

TEST_CASE("The outlined reading and the one document agree on edge cases", "[manifest]") {
  const std::string tensor = R"({"name":"w","dtype":"f","shape":[2,3]})";
  auto text = GENERATE_COPY(values<std::string>({
      // Escapes and unicode in names, keys written with escapes in a module.
      TwoModules(R"({"path":"a","class":"L\u00e9\n\"q\"","qualified_class":"t.\u4e2d\ud83d\ude00","parent":"","children":[],"parameters":[)" + tensor + R"(],"buffers":[]})"),
      TwoModules(R"({"p\u0061th":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})"),
      TwoModules(R"({"path":"a","class":"\u00fcber \\ / \/","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})"),
      // A repeated key in a module: the last one counts.
      TwoModules(R"({"path":"a","class":"First","class":"Last","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})"),
      // Repeated and escaped top-level keys: "modules" twice, "model" twice,
      // a key that spells "modules" with an escape.
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})",
                 R"(,"modules":[])"),
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})",
                 R"(,"model":{"class":"N","qualified_class":"t.N","config":{"k":[1]}})"),
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})",
                 R"(,"modul\u0065s":5)"),
      // Whitespace everywhere the grammar allows it; brackets inside strings.
      " \n" + TwoModules(R"( { "path" : "a" , "class" : "L]}[{" , "qualified_class" : "q\"]" , "parent" : "" , "children" : [ ] , "parameters" : [ ] , "buffers" : [ ] } )",
                        "\t\r\n") + " \n",
      // Modules not an array, or none.
      R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":{"path":""}})",
      R"({"format":"semmap.manifest","schema_version":1,"model":{"class":"M","qualified_class":"t.M"},"modules":[]})",
      // A meaning error inside a module, then a syntax error after the
      // modules member: the syntax error is reported.
      TwoModules(R"({"path":"a","class":5,"qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})",
                 R"(,"generator":{"a": })"),
      TwoModules(R"({"path":"a","class":5,"qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})",
                 R"(,"generator":{"a":"\x"})"),
      // Syntax errors inside a module, between modules, after the object.
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[01],"buffers":[]})"),
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]} {})"),
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})") + " x",
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]],)"),
      TwoModules(std::string(R"({"path":"a","class":")") + "\xff" +
                 R"(","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})"),
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[]})").substr(0, 300),
      // A meaning error in a module (the pointer names its index).
      TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[{"name":"w","dtype":"f","shape":[-1]}],"buffers":[]})"),
  }));
  CAPTURE(text);
  CheckReadingsAgree(text);
}

TEST_CASE("The outlined reading keeps the nesting limit of the whole file", "[manifest]") {
  // The modules sit two levels down (the object, the array): a module
  // nested to 254 more levels is within the limit of 256, one more is not.
  const auto nested = [](int levels) {
    return TwoModules(R"({"path":"a","class":"L","qualified_class":"q","parent":"","children":[],"parameters":[],"buffers":[],"x":)" +
                      std::string(static_cast<std::size_t>(levels - 1), '[') +
                      std::string(static_cast<std::size_t>(levels - 1), ']') + "}");
  };
  for (int levels : {254, 255}) {
    CAPTURE(levels);
    const std::string text = nested(levels);
    CheckReadingsAgree(text);
    const absl::StatusOr<Manifest> any = ReadAs(text, Way::kAny);
    REQUIRE_FALSE(any.ok());
    const std::string message(any.status().message());
    CAPTURE(message);
    CHECK((message.find("nested deeper than 256 levels") != std::string::npos) == (levels == 255));
    CHECK((message.find("unknown field \"x\"") != std::string::npos) == (levels == 254));
  }
}
