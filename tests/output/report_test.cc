#include <string>

#include "catch2/catch.hpp"
#include "mapped_fixture.h"
#include "nlohmann/json.hpp"
#include "semmap/report.h"
#include "semmap/semmap.h"
#include "temp_dir.h"
#include "test_util.h"

using semmap_test::LoadMapped;
using semmap_test::TempDir;

namespace {

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The JSON between the data element's tags.
std::string EmbeddedData(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"semmap-data\">";
  const std::size_t start = html.find(open);
  REQUIRE(start != std::string::npos);
  const std::size_t end = html.find("</script>", start);
  REQUIRE(end != std::string::npos);
  return html.substr(start + open.size(), end - start - open.size());
}

}  // namespace

TEST_CASE("The report embeds the module tree and every node's mapping", "[report][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  semmap::ReportOptions options;
  options.model_path = f->model_path();
  const std::string html = semmap::ReportHtml(*f->mapper, options);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("__SEMMAP_REPORT_DATA__") == std::string::npos);
  CHECK(html.find("http://") == std::string::npos);   // nothing fetched
  CHECK(html.find("https://") == std::string::npos);

  const nlohmann::json data = nlohmann::json::parse(EmbeddedData(html));
  CHECK(data.at("format") == "semmap.report");
  CHECK(data.at("schema_version") == 2);
  // Columns: one array per field; repeated strings are indices into "strings".
  const nlohmann::json& strings = data.at("strings");
  const nlohmann::json& mods = data.at("modules");
  const nlohmann::json& nodes = data.at("nodes");
  CHECK(mods.at("path").size() == f->manifest->size());
  for (const auto& [key, column] : mods.items()) CHECK(column.size() == f->manifest->size());
  CHECK(nodes.at("name").size() == f->graph->size());
  for (const auto& [key, column] : nodes.items()) CHECK(column.size() == f->graph->size());
  CHECK(mods.at("path").at(0) == "");
  CHECK(mods.at("parent").at(0) == -1);
  CHECK(mods.at("subtree_nodes").at(0) == f->mapper->mappedCount());
  CHECK(mods.at("min_confidence").at(0).get<double>() > 0);

  // Layer 1's query projection: two nodes, one MatMul, confidence 1.
  bool found_module = false;
  for (std::size_t i = 0; i < mods.at("path").size(); ++i) {
    if (mods.at("path").at(i) != "bert.encoder.layer.1.attention.self.query") continue;
    found_module = true;
    CHECK(strings.at(mods.at("class").at(i).get<int>()) == "Linear");
    CHECK(mods.at("own_nodes").at(i) == 2);
    const nlohmann::json& ops = mods.at("own_op_types").at(i);  // [op, count, ...]
    REQUIRE(ops.size() == 4);
    CHECK(strings.at(ops.at(0).get<int>()) == "Add");  // ties: by name
    CHECK(strings.at(ops.at(2).get<int>()) == "MatMul");
    CHECK(ops.at(3) == 1);
    CHECK(mods.at("own_parameters").at(i).get<long>() > 0);
    CHECK(mods.at("mean_confidence").at(i).get<double>() == 1.0);
  }
  CHECK(found_module);
  bool found = false;
  for (std::size_t k = 0; k < nodes.at("name").size(); ++k) {
    if (nodes.at("name").at(k) != "/bert/encoder/layer.1/attention/self/query/MatMul") continue;
    found = true;
    CHECK(nodes.at("id").at(k).is_null());  // the same as the name
    const int module = nodes.at("m").at(k);
    CHECK(mods.at("path").at(module) == "bert.encoder.layer.1.attention.self.query");
    CHECK(strings.at(nodes.at("strategy").at(k).get<int>()) == "exact_scope");
    CHECK(strings.at(nodes.at("op").at(k).get<int>()) == "MatMul");
    CHECK_FALSE(strings.at(nodes.at("evidence").at(k).get<int>()).get<std::string>().empty());
  }
  CHECK(found);
}

TEST_CASE("Hostile node names cannot close the report's script element", "[report]") {
  onnx::ModelProto model = semmap_test::MakeModel();
  auto* g = model.mutable_graph();
  semmap_test::AddNode(g, "/a</script><script>alert(1)</script>/Relu", "Relu", {"x"}, {"y"});
  semmap_test::AddNode(g, "<!--&amp;", "Neg", {"y"}, {"z"});
  auto graph = semmap::Graph::Parse(semmap_test::Serialize(model), "hostile.onnx");
  REQUIRE(graph.ok());
  auto mapper = semmap::SemanticMapper::Create(*graph, nullptr);
  REQUIRE(mapper.ok());
  const std::string html = semmap::ReportHtml(*mapper);
  // The template's two script elements, no more.
  CHECK(Count(html, "</script") == 2);
  CHECK(Count(html, "<!--") == 0);
  const std::string json = EmbeddedData(html);
  CHECK(json.find('<') == std::string::npos);
  CHECK(json.find('&') == std::string::npos);
  const nlohmann::json data = nlohmann::json::parse(json);
  CHECK(data.at("nodes").at("name").at(0) == "/a</script><script>alert(1)</script>/Relu");
  CHECK(data.at("nodes").at("name").at(1) == "<!--&amp;");
}

TEST_CASE("WriteReport refuses to overwrite its inputs and writes atomically", "[report][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  TempDir tmp;
  semmap::ReportOptions options;
  options.model_path = tmp.file("model.onnx");
  semmap_test::WriteBytes(options.model_path, "not really a model");
  auto refused = semmap::WriteReport(*f->mapper, options.model_path, options);
  CHECK(refused.code() == absl::StatusCode::kInvalidArgument);
  CHECK(semmap_test::ReadBytes(options.model_path) == "not really a model");
  auto missing = semmap::WriteReport(*f->mapper, tmp.file("nodir/r.html"), options);
  CHECK(missing.code() == absl::StatusCode::kNotFound);
  REQUIRE(semmap::WriteReport(*f->mapper, tmp.file("r.html"), options).ok());
  CHECK(semmap_test::ReadBytes(tmp.file("r.html")) == semmap::ReportHtml(*f->mapper, options));
}

TEST_CASE("A profile adds kernel time to the report's data", "[report][profile][fixture]") {
  auto f = LoadMapped("bert-seqcls.torchscript");
  const std::string query = "/bert/encoder/layer.1/attention/self/query/MatMul";
  const std::string text = "[{\"cat\": \"Node\", \"name\": \"" + query +
                           "_kernel_time\", \"dur\": 25, \"args\": {\"op_name\": \"MatMul\"}},"
                           "{\"cat\": \"Node\", \"name\": \"elsewhere_kernel_time\", \"dur\": 5}]";
  auto profile = semmap::Profile::Parse(text, "p.json");
  REQUIRE(profile.ok());
  auto a = semmap::AttributeProfile(*f->mapper, *profile);
  REQUIRE(a.ok());
  semmap::ReportOptions options;
  CHECK(nlohmann::json::parse(semmap::ReportDataJson(*f->mapper, options)).count("profile") == 0);
  options.profile = &*a;
  options.profile_path = "p.json";
  const auto data = nlohmann::json::parse(semmap::ReportDataJson(*f->mapper, options));
  CHECK(data["profile"]["kernel_us"] == 30);
  CHECK(data["profile"]["attributed_us"] == 25);
  const auto& paths = data["modules"]["path"];
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string path = paths[i];
    CAPTURE(path);
    const std::string module = "bert.encoder.layer.1.attention.self.query";
    const bool above = path.empty() || path == module || module.rfind(path + ".", 0) == 0;
    CHECK(data["modules"]["time_us"][i] == (above ? 25 : 0));
  }
  const semmap::NodeId id = f->graph->find(query);
  CHECK(data["nodes"]["time_us"][id] == 25);
}

namespace {

// `semmap compare-numerics` of the torch-2.15 dynamo BERT and its
// quantize_dynamic copy (tests/data/README.md says how it was made).
std::string NumericsFixture() {
  return std::string(SEMMAP_SOURCE_DIR) + "/tests/data/bert-seqcls.dynamo.quantized.numerics.json";
}

}  // namespace

TEST_CASE("A numerics document is embedded in the report's data", "[report][numerics][fixture]") {
  auto read = semmap::ReadReportNumerics(NumericsFixture());
  REQUIRE(read.ok());
  const nlohmann::json doc = nlohmann::json::parse(semmap_test::ReadBytes(NumericsFixture()));
  CHECK(read->leaf.size() == doc["views"]["leaf"].size());
  CHECK(read->subtree.size() == doc["views"]["subtree"].size());
  CHECK(read->leaf_ranked_by == doc["ranked_by"]["leaf"]);
  CHECK(read->deployed_path == doc["deployed"]["path"]);

  auto f = LoadMapped("torch-2.15/bert-seqcls.dynamo.quantized");
  semmap::ReportOptions options;
  options.model_path = f->model_path();
  options.numerics = &*read;
  options.numerics_path = "numerics.json";
  const std::string html = semmap::ReportHtml(*f->mapper, options);
  const nlohmann::json data = nlohmann::json::parse(EmbeddedData(html));
  const nlohmann::json& n = data.at("numerics");
  CHECK(n.at("path") == "numerics.json");
  CHECK(n.at("reference") == doc["reference"]["path"]);
  const nlohmann::json& paths = data.at("modules").at("path");
  for (const char* view : {"leaf", "subtree"}) {
    const nlohmann::json& rows = doc["views"][view];
    const nlohmann::json& columns = n.at(view);
    for (const auto& [key, column] : columns.items()) CHECK(column.size() == rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::string module = rows[r]["module"];
      CAPTURE(view, module);
      // Both files of the comparison share module paths: each is in this tree.
      const int m = columns.at("m").at(r);
      REQUIRE(m >= 0);
      CHECK(paths.at(m) == module);
      CHECK(columns.at("module").at(r).is_null());  // named by m
      CHECK(columns.at("rank").at(r) == rows[r]["rank"]);
      CHECK(columns.at("added").at(r) == rows[r]["added_error"]);
      if (!rows[r]["output_error"].is_null()) {
        CHECK(columns.at("out").at(r) == rows[r]["output_error"]["rel_l2"]);
      }
      if (rows[r].contains("local_error")) {
        CHECK(columns.at("local").at(r) == rows[r]["local_error"]["rel_l2"]);
      }
    }
  }

  // The same document naming this model's file: the page says it is the deployed side.
  TempDir tmp;
  nlohmann::json here = doc;
  here["deployed"]["path"] = f->model_path();
  semmap_test::WriteBytes(tmp.file("n.json"), here.dump());
  auto mine = semmap::ReadReportNumerics(tmp.file("n.json"));
  REQUIRE(mine.ok());
  options.numerics = &*mine;
  CHECK(nlohmann::json::parse(semmap::ReportDataJson(*f->mapper, options))["numerics"]["side"] ==
        "deployed");
  // Naming neither file (another string, and no file from here): null, and
  // the report is still written.
  nlohmann::json elsewhere = doc;
  elsewhere["reference"]["path"] = tmp.file("a/model.onnx");
  elsewhere["deployed"]["path"] = "model.onnx";
  semmap_test::WriteBytes(tmp.file("e.json"), elsewhere.dump());
  auto other = semmap::ReadReportNumerics(tmp.file("e.json"));
  REQUIRE(other.ok());
  options.numerics = &*other;
  CHECK(nlohmann::json::parse(semmap::ReportDataJson(*f->mapper, options))["numerics"]["side"]
            .is_null());
  REQUIRE(semmap::WriteReport(*f->mapper, tmp.file("r.html"), options).ok());
  // The numerics file is an input, protected like the model.
  options.numerics_path = tmp.file("n.json");
  CHECK(semmap::WriteReport(*f->mapper, tmp.file("n.json"), options).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("A wrong or broken numerics document is refused with the file and the cause",
          "[report][numerics]") {
  TempDir tmp;
  const std::string valid = semmap_test::ReadBytes(NumericsFixture());
  nlohmann::json doc = nlohmann::json::parse(valid);
  nlohmann::json other_format = doc, other_version = doc, bad_figure = doc, no_views = doc,
                 bad_rank = doc;
  other_format["format"] = "semmap.report";
  other_version["version"] = 2;
  bad_figure["views"]["leaf"][0]["added_error"] = "0.1";
  no_views.erase("views");
  bad_rank["views"]["subtree"][1]["rank"] = 0;
  auto [name, text, cause] = GENERATE_COPY(table<std::string, std::string, std::string>({
      {"truncated", valid.substr(0, valid.size() / 2), "not valid JSON at byte"},
      {"not an object", "[1, 2]", "expected an object, found array"},
      {"another format", other_format.dump(), "/format: not a \"semmap.numerics\" document "
                                              "(format \"semmap.report\")"},
      {"another version", other_version.dump(), "/version: version 2, this semmap reads "
                                                "semmap.numerics version 1"},
      {"a figure as text", bad_figure.dump(), "/views/leaf/0/added_error: expected a number or "
                                              "null, found string"},
      {"no views", no_views.dump(), "missing required field \"views\""},
      {"rank 0", bad_rank.dump(), "/views/subtree/1/rank: expected a rank (1, 2, ...) or null"},
  }));
  CAPTURE(name);
  const std::string path = tmp.file(name + ".json");
  semmap_test::WriteBytes(path, text);
  auto read = semmap::ReadReportNumerics(path);
  REQUIRE_FALSE(read.ok());
  CHECK(read.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(read.status().message()).rfind(path, 0) == 0);
  CHECK_THAT(std::string(read.status().message()), Catch::Matchers::Contains(cause));

  auto missing = semmap::ReadReportNumerics(tmp.file("missing.json"));
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(std::string(missing.status().message()).rfind(tmp.file("missing.json"), 0) == 0);
}

TEST_CASE("Hostile module names in a numerics document cannot close the script element",
          "[report][numerics]") {
  const std::string hostile = "a</script><img src=x onerror=alert(1)>";
  nlohmann::json doc = nlohmann::json::parse(semmap_test::ReadBytes(NumericsFixture()));
  doc["views"]["leaf"][0]["module"] = hostile;
  doc["views"]["leaf"][0]["class"] = "<!--&amp;";
  doc["views"]["leaf"][0]["fused"] = {hostile};
  doc["deployed"]["path"] = "</script><b>deployed</b>";
  TempDir tmp;
  semmap_test::WriteBytes(tmp.file("n.json"), doc.dump());
  auto read = semmap::ReadReportNumerics(tmp.file("n.json"));
  REQUIRE(read.ok());
  auto f = LoadMapped("torch-2.15/bert-seqcls.dynamo.quantized");
  semmap::ReportOptions options;
  options.numerics = &*read;
  const std::string html = semmap::ReportHtml(*f->mapper, options);
  CHECK(Count(html, "</script") == 2);
  CHECK(Count(html, "<!--") == 0);
  const std::string json = EmbeddedData(html);
  CHECK(json.find('<') == std::string::npos);
  CHECK(json.find('&') == std::string::npos);
  const nlohmann::json n = nlohmann::json::parse(json).at("numerics");
  CHECK(n["leaf"]["module"][0] == hostile);
  CHECK(n["leaf"]["m"][0] == -1);  // no such module in this model
  CHECK(n["leaf"]["class"][0] == "<!--&amp;");
  CHECK(n["leaf"]["fused"][0][0] == hostile);
  CHECK(n["deployed"] == "</script><b>deployed</b>");
}
