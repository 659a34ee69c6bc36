#include "semmap/report.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "io/atomic_write.h"
#include "nlohmann/json.hpp"
#include "output/report_template.h"
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

// Strings that repeat, stored once; columns hold their indices.
struct StringTable {
  json list = json::array();
  absl::flat_hash_map<std::string, int> index;
  int Index(const std::string& s) {
    auto [it, inserted] = index.try_emplace(s, static_cast<int>(list.size()));
    if (inserted) list.push_back(s);
    return it->second;
  }
};

// [string index, count, ...], most frequent first (ties by name).
json OpCounts(const std::map<std::string, std::size_t>& ops, StringTable& strings) {
  std::vector<std::pair<std::string, std::size_t>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  json out = json::array();
  for (const auto& [op, count] : sorted) {
    out.push_back(strings.Index(op));
    out.push_back(count);
  }
  return out;
}

}  // namespace

// Long (about 120 lines) on purpose: it declares the report's columns one
// by one and fills them in one loop per table, so the JSON fields read in
// the order the page's script reads them (report_template.html).
std::string ReportDataJson(const SemanticMapper& mapper, const ReportOptions& options) {
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  const ModuleTree tree = ModuleTree::Build(mapper);
  const std::vector<TreeModule>& mods = tree.modules();

  // Columns, one array per field, and one table for the strings that repeat
  // (op types, classes, strategies, categories, evidence): a 50,000-node
  // model parses in a fraction of the time one object per node takes.
  StringTable strings;
  std::vector<Confidence> own(mods.size()), subtree(mods.size());
  json node_id = json::array(), node_name = json::array(), node_op = json::array(),
       node_module = json::array(), node_conf = json::array(), node_strategy = json::array(),
       node_category = json::array(), node_evidence = json::array(), node_subgraph = json::array();
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(static_cast<NodeId>(i));
    const Mapping& m = mapper.moduleFor(static_cast<NodeId>(i));
    const int index = m.mapped() ? tree.find(m.module_path) : -1;
    if (index >= 0) own[index].add(m.confidence);
    node_id.push_back(n.id == n.name ? json() : json(n.id));
    node_name.push_back(n.name);
    node_op.push_back(strings.Index(QualifiedOpType(n)));
    node_module.push_back(index);
    node_conf.push_back(m.confidence);
    node_strategy.push_back(strings.Index(std::string(StrategyName(m.strategy))));
    node_category.push_back(strings.Index(std::string(m.category)));
    node_evidence.push_back(strings.Index(std::string(m.evidence)));
    node_subgraph.push_back(n.subgraph);
  }
  for (std::size_t i = 0; i < mods.size(); ++i) subtree[i] = own[i];
  for (std::size_t i = mods.size(); i-- > 1;) subtree[mods[i].parent].add(subtree[i]);

  json path = json::array(), class_name = json::array(), qualified = json::array(),
       parent = json::array(), depth = json::array(), own_nodes = json::array(),
       subtree_nodes = json::array(), own_parameters = json::array(),
       subtree_parameters = json::array(), op_types = json::array(), own_op_types = json::array(),
       mean = json::array(), min = json::array(), own_mean = json::array(), own_min = json::array();
  const ProfileAttribution* profile = options.profile;
  if (profile != nullptr &&
      (profile->node_us.size() != graph.size() || profile->modules.size() != manifest.size())) {
    profile = nullptr;  // another graph's: documented as ignored
  }
  json time_us = json::array(), own_time_us = json::array();
  for (std::size_t i = 0; i < mods.size(); ++i) {
    const TreeModule& m = mods[i];
    if (profile != nullptr) {
      time_us.push_back(profile->modules[m.module].subtree_us);
      own_time_us.push_back(profile->modules[m.module].own_us);
    }
    const ModuleInfo& info = tree.info(m);
    path.push_back(info.path);
    class_name.push_back(strings.Index(info.class_name));
    qualified.push_back(strings.Index(info.qualified_class));
    parent.push_back(m.parent);
    depth.push_back(m.depth);
    own_nodes.push_back(m.own_nodes);
    subtree_nodes.push_back(m.subtree_nodes);
    own_parameters.push_back(m.own_parameters);
    subtree_parameters.push_back(m.subtree_parameters);
    op_types.push_back(OpCounts(m.subtree_op_types, strings));
    own_op_types.push_back(OpCounts(m.own_op_types, strings));
    mean.push_back(subtree[i].mean_json());
    min.push_back(subtree[i].min_json());
    own_mean.push_back(own[i].mean_json());
    own_min.push_back(own[i].min_json());
  }
  json doc = {{"format", "semmap.report"},
              {"schema_version", 2},
              {"generator", {{"semmap", SEMMAP_VERSION_STRING}}},
              {"model",
               {{"path", options.model_path},
                {"nodes", graph.size()},
                {"mapped", mapper.mappedCount()},
                {"opset", graph.opset()},
                {"producer", absl::StrCat(graph.producerName(), " ", graph.producerVersion())}}},
              {"manifest",
               {{"path", options.manifest_path},
                {"model_class", mapper.hasManifest() ? manifest.modelClass() : ""}}},
              {"strings", std::move(strings.list)},
              {"modules",
               {{"path", std::move(path)},
                {"class", std::move(class_name)},
                {"qualified_class", std::move(qualified)},
                {"parent", std::move(parent)},
                {"depth", std::move(depth)},
                {"own_nodes", std::move(own_nodes)},
                {"subtree_nodes", std::move(subtree_nodes)},
                {"own_parameters", std::move(own_parameters)},
                {"subtree_parameters", std::move(subtree_parameters)},
                {"op_types", std::move(op_types)},
                {"own_op_types", std::move(own_op_types)},
                {"mean_confidence", std::move(mean)},
                {"min_confidence", std::move(min)},
                {"own_mean_confidence", std::move(own_mean)},
                {"own_min_confidence", std::move(own_min)}}},
              {"nodes",
               {{"id", std::move(node_id)},
                {"name", std::move(node_name)},
                {"op", std::move(node_op)},
                {"m", std::move(node_module)},
                {"conf", std::move(node_conf)},
                {"strategy", std::move(node_strategy)},
                {"category", std::move(node_category)},
                {"evidence", std::move(node_evidence)},
                {"subgraph", std::move(node_subgraph)}}}};
  if (profile != nullptr) {
    doc["profile"] = {{"path", options.profile_path},
                      {"kernel_us", profile->kernel_us},
                      {"attributed_us", profile->attributed_us},
                      {"profiled_nodes", profile->profiled_nodes},
                      {"attributed_nodes", profile->attributed_nodes}};
    doc["modules"]["time_us"] = std::move(time_us);
    doc["modules"]["own_time_us"] = std::move(own_time_us);
    doc["nodes"]["time_us"] = profile->node_us;
  }
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
      output,
      {{options.model_path, "the model"},
       {options.manifest_path, "the manifest"},
       {options.profile_path, "the profile"}},
      options.protected_paths, options.allow_overwrite));
  return internal::WriteFileAtomically(output, ReportHtml(mapper, options));
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "writing the report");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "writing the report");
}

}  // namespace semmap
