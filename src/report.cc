#include "semmap/report.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "internal/atomic_write.h"
#include "internal/out_of_memory.h"
#include "internal/report_template.h"
#include "internal/status_macros.h"
#include "nlohmann/json.hpp"
#include "semmap/tree.h"
#include "semmap/version.h"

namespace semmap {
namespace {

using nlohmann::json;

constexpr absl::string_view kDataPlaceholder = "__SEMMAP_REPORT_DATA__";

struct Confidence {
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  std::size_t count = 0;
  void add(double c) {
    sum += c;
    min = std::min(min, c);
    ++count;
  }
  void add(const Confidence& o) {
    sum += o.sum;
    min = std::min(min, o.min);
    count += o.count;
  }
  json mean_json() const { return count ? json(sum / count) : json(); }
  json min_json() const { return count ? json(min) : json(); }
};

// JSON text safe inside a <script> element: '<', '>' and '&' only occur in
// strings, where their \u escapes mean the same.
std::string EscapeForScript(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string ReportDataJson(const SemanticMapper& mapper, const ReportOptions& options) {
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  const ModuleTree tree = ModuleTree::Build(mapper);
  const std::vector<TreeModule>& mods = tree.modules();

  std::vector<Confidence> own(mods.size()), subtree(mods.size());
  json nodes = json::array();
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(static_cast<NodeId>(i));
    const Mapping& m = mapper.moduleFor(static_cast<NodeId>(i));
    const int index = m.mapped() ? tree.find(m.module_path) : -1;
    if (index >= 0) own[index].add(m.confidence);
    nodes.push_back({{"id", n.id},
                     {"name", n.name},
                     {"op", QualifiedOpType(n)},
                     {"m", index},
                     {"conf", m.confidence},
                     {"strategy", std::string(StrategyName(m.strategy))},
                     {"category", std::string(m.category)},
                     {"evidence", m.evidence},
                     {"subgraph", n.subgraph}});
  }
  for (std::size_t i = 0; i < mods.size(); ++i) subtree[i] = own[i];
  for (std::size_t i = mods.size(); i-- > 1;) subtree[mods[i].parent].add(subtree[i]);

  json modules = json::array();
  for (std::size_t i = 0; i < mods.size(); ++i) {
    const TreeModule& m = mods[i];
    const ModuleInfo& info = tree.info(m);
    modules.push_back({{"path", info.path},
                       {"class", info.class_name},
                       {"qualified_class", info.qualified_class},
                       {"parent", m.parent},
                       {"depth", m.depth},
                       {"own_nodes", m.own_nodes},
                       {"subtree_nodes", m.subtree_nodes},
                       {"own_parameters", m.own_parameters},
                       {"subtree_parameters", m.subtree_parameters},
                       {"op_types", m.subtree_op_types},
                       {"own_op_types", m.own_op_types},
                       {"mean_confidence", subtree[i].mean_json()},
                       {"min_confidence", subtree[i].min_json()},
                       {"own_mean_confidence", own[i].mean_json()},
                       {"own_min_confidence", own[i].min_json()}});
  }
  json doc = {{"format", "semmap.report"},
              {"schema_version", 1},
              {"generator", {{"semmap", SEMMAP_VERSION_STRING}}},
              {"model",
               {{"path", options.model_path},
                {"nodes", graph.size()},
                {"mapped", mapper.mappedCount()},
                {"opset", graph.opset()},
                {"producer", absl::StrCat(graph.producer_name(), " ", graph.producer_version())}}},
              {"manifest",
               {{"path", options.manifest_path},
                {"model_class", mapper.hasManifest() ? manifest.model_class() : ""}}},
              {"modules", modules},
              {"nodes", nodes}};
  // Names come from the file: replace invalid UTF-8 rather than throw.
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ReportHtml(const SemanticMapper& mapper, const ReportOptions& options) {
  const absl::string_view page = internal::kReportTemplate;
  const std::size_t at = page.find(kDataPlaceholder);
  // The template is ours; a missing placeholder is a build error caught by tests.
  if (at == absl::string_view::npos) return std::string(page);
  return absl::StrCat(page.substr(0, at), EscapeForScript(ReportDataJson(mapper, options)),
                      page.substr(at + kDataPlaceholder.size()));
}

absl::Status WriteReport(const SemanticMapper& mapper, const std::string& output,
                         const ReportOptions& options) try {
  SEMMAP_RETURN_IF_ERROR(internal::CheckOutputFor(
      output, {{options.model_path, "the model"}, {options.manifest_path, "the manifest"}},
      options.allow_overwrite));
  return internal::WriteFileAtomically(output, ReportHtml(mapper, options));
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "writing the report");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "writing the report");
}

}  // namespace semmap
