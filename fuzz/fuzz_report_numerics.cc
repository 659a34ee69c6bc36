// Fuzz target for ParseReportNumerics (a "semmap.numerics" document read
// for the report's numerics tab) and the report's data made with it.
// Properties:
//   - an error names the origin and is InvalidArgument;
//   - a parsed document's ranks are 0 (not ranked) or positive;
//   - the report of a small model with it holds exactly the template's two
//     script elements, its data has no '<', '>' or '&' and is valid JSON,
//     each view's columns have one entry per row, and `m` is -1 or a module
//     of the report whose path is the row's module.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "semmap/semmap.h"

namespace {

constexpr absl::string_view kOrigin = "fuzz.json";

// A model of three modules by their node names (no manifest): "", "encoder"
// and "encoder.layer".
const semmap::SemanticMapper& Mapper() {
  static const semmap::SemanticMapper* mapper = [] {
    onnx::ModelProto model;
    model.set_ir_version(8);
    model.add_opset_import()->set_version(17);
    onnx::GraphProto* g = model.mutable_graph();
    g->set_name("g");
    const char* names[] = {"/encoder/layer/Relu", "/encoder/Neg"};
    const char* ops[] = {"Relu", "Neg"};
    for (int i = 0; i < 2; ++i) {
      onnx::NodeProto* n = g->add_node();
      n->set_name(names[i]);
      n->set_op_type(ops[i]);
      n->add_input(i == 0 ? "x" : "a");
      n->add_output(i == 0 ? "a" : "y");
    }
    absl::StatusOr<semmap::Graph> graph = semmap::Graph::Parse(model.SerializeAsString(), "m.onnx");
    SEMMAP_FUZZ_CHECK(graph.ok());
    absl::StatusOr<semmap::SemanticMapper> m = semmap::SemanticMapper::Create(*graph, nullptr);
    SEMMAP_FUZZ_CHECK(m.ok());
    return new semmap::SemanticMapper(*std::move(m));
  }();
  return *mapper;
}

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<semmap::ReportNumerics> n = semmap::ParseReportNumerics(text, kOrigin);
  if (!n.ok()) {
    semmap_fuzz::CheckErrorNamesOrigin(n.status(), kOrigin);
    SEMMAP_FUZZ_CHECK(n.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  for (const auto* view : {&n->leaf, &n->subtree}) {
    for (const semmap::NumericsRow& r : *view) SEMMAP_FUZZ_CHECK(r.rank >= 0);
  }
  semmap::ReportOptions options;
  options.numerics = &*n;
  const std::string html = semmap::ReportHtml(Mapper(), options);
  SEMMAP_FUZZ_CHECK(Count(html, "</script") == 2);
  const std::string open = "<script type=\"application/json\" id=\"semmap-data\">";
  const std::size_t start = html.find(open);
  SEMMAP_FUZZ_CHECK(start != std::string::npos);
  const std::size_t end = html.find("</script>", start);
  const std::string json = html.substr(start + open.size(), end - start - open.size());
  SEMMAP_FUZZ_CHECK(json.find_first_of("<>&") == std::string::npos);
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  SEMMAP_FUZZ_CHECK(!doc.is_discarded());
  const nlohmann::json& paths = doc["modules"]["path"];
  for (const char* key : {"leaf", "subtree"}) {
    const nlohmann::json& columns = doc["numerics"][key];
    const auto& rows = key[0] == 'l' ? n->leaf : n->subtree;
    for (const auto& column : columns) SEMMAP_FUZZ_CHECK(column.size() == rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const int m = columns["m"][r].get<int>();
      SEMMAP_FUZZ_CHECK(m >= -1 && m < static_cast<int>(paths.size()));
      if (m >= 0) SEMMAP_FUZZ_CHECK(paths[m] == rows[r].module);
    }
  }
  return 0;
}
