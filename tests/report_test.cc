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
  CHECK(data.at("modules").size() == f->manifest->size());
  CHECK(data.at("nodes").size() == f->graph->size());
  const nlohmann::json& root = data.at("modules").at(0);
  CHECK(root.at("path") == "");
  CHECK(root.at("subtree_nodes") == f->mapper->mappedCount());
  CHECK(root.at("min_confidence").get<double>() > 0);

  // Layer 1's query projection: two nodes, one MatMul, confidence 1.
  for (const auto& m : data.at("modules")) {
    if (m.at("path") != "bert.encoder.layer.1.attention.self.query") continue;
    CHECK(m.at("class") == "Linear");
    CHECK(m.at("own_nodes") == 2);
    CHECK(m.at("own_op_types").at("MatMul") == 1);
    CHECK(m.at("own_parameters").get<long>() > 0);
    CHECK(m.at("mean_confidence").get<double>() == 1.0);
  }
  bool found = false;
  for (const auto& n : data.at("nodes")) {
    if (n.at("name") != "/bert/encoder/layer.1/attention/self/query/MatMul") continue;
    found = true;
    const int module = n.at("m");
    CHECK(data.at("modules").at(module).at("path") == "bert.encoder.layer.1.attention.self.query");
    CHECK(n.at("strategy") == "exact_scope");
    CHECK_FALSE(n.at("evidence").get<std::string>().empty());
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
  CHECK(data.at("nodes").at(0).at("name") == "/a</script><script>alert(1)</script>/Relu");
  CHECK(data.at("nodes").at(1).at("name") == "<!--&amp;");
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
