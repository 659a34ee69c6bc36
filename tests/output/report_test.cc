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
