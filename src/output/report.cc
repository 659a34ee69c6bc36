#include "semmap/report.h"

#include <algorithm>
#include <cstdint>
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
#include "io/json_writer.h"
#include "output/report_numerics.h"
#include "output/report_template.h"
#include "semmap/tree.h"
#include "semmap/version.h"

namespace semmap {
namespace {

using internal::JsonWriter;

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
  std::vector<std::string> list;
  absl::flat_hash_map<std::string, int> index;
  int Index(const std::string& s) {
    auto [it, inserted] = index.try_emplace(s, static_cast<int>(list.size()));
    if (inserted) list.push_back(s);
    return it->second;
  }
};

// [string index, count, ...], most frequent first (ties by name).
std::vector<std::uint64_t> OpCounts(const std::map<std::string, std::size_t>& ops,
                                    StringTable& strings) {
  std::vector<std::pair<std::string, std::size_t>> sorted(ops.begin(), ops.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::uint64_t> out;
  for (const auto& [op, count] : sorted) {
    out.push_back(static_cast<std::uint64_t>(strings.Index(op)));
    out.push_back(count);
  }
  return out;
}

// A column: an array of integers.
template <typename T>
void Integers(JsonWriter& w, const std::vector<T>& values) {
  w.BeginArray();
  for (T v : values) w.Integer(v);
  w.EndArray();
}

// A column of confidences: the mean or minimum of each entry, null for an
// entry without any.
void Confidences(JsonWriter& w, const std::vector<Confidence>& values, bool mean) {
  w.BeginArray();
  for (const Confidence& c : values) {
    if (c.count == 0) {
      w.Null();
    } else {
      w.Number(mean ? c.sum / static_cast<double>(c.count) : c.min);
    }
  }
  w.EndArray();
}

}  // namespace

// Long (about 150 lines) on purpose: it fills the report's columns in one
// loop per table (the string table's indices in that order), then writes
// them one by one in key order, the fields the page's script reads
// (report_template.html).
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
  std::vector<int> node_op, node_module, node_strategy, node_category, node_evidence,
      node_subgraph;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Node& n = graph.node(static_cast<NodeId>(i));
    const Mapping& m = mapper.moduleFor(static_cast<NodeId>(i));
    const int index = m.mapped() ? tree.find(m.module_path) : -1;
    if (index >= 0) own[index].add(m.confidence);
    node_op.push_back(strings.Index(QualifiedOpType(n)));
    node_module.push_back(index);
    node_strategy.push_back(strings.Index(std::string(StrategyName(m.strategy))));
    node_category.push_back(strings.Index(std::string(m.category)));
    node_evidence.push_back(strings.Index(std::string(m.evidence)));
    node_subgraph.push_back(n.subgraph);
  }
  for (std::size_t i = 0; i < mods.size(); ++i) subtree[i] = own[i];
  for (std::size_t i = mods.size(); i-- > 1;) subtree[mods[i].parent].add(subtree[i]);

  std::vector<int> class_name, qualified;
  std::vector<std::vector<std::uint64_t>> op_types, own_op_types;
  for (const TreeModule& m : mods) {
    const ModuleInfo& info = tree.info(m);
    class_name.push_back(strings.Index(std::string(info.class_name)));
    qualified.push_back(strings.Index(std::string(info.qualified_class)));
    op_types.push_back(OpCounts(m.subtree_op_types, strings));
    own_op_types.push_back(OpCounts(m.own_op_types, strings));
  }
  const ProfileAttribution* profile = options.profile;
  if (profile != nullptr &&
      (profile->node_us.size() != graph.size() || profile->modules.size() != manifest.size())) {
    profile = nullptr;  // another graph's: documented as ignored
  }
  const auto module_column = [&](JsonWriter& w, auto value) {
    w.BeginArray();
    for (const TreeModule& m : mods) w.Integer(value(m));
    w.EndArray();
  };
  const auto op_column = [](JsonWriter& w, const std::vector<std::vector<std::uint64_t>>& ops) {
    w.BeginArray();
    for (const std::vector<std::uint64_t>& counts : ops) Integers(w, counts);
    w.EndArray();
  };

  // Names come from the file: invalid UTF-8 is replaced rather than thrown.
  // Members in sorted key order, as the writer needs them.
  std::string text;
  JsonWriter w(&text, 0, JsonWriter::kCompact);
  w.BeginObject();
  w.Key("format").String("semmap.report");
  w.Key("generator").BeginObject();
  w.Key("semmap").String(SEMMAP_VERSION_STRING);
  w.EndObject();
  w.Key("manifest").BeginObject();
  w.Key("model_class").String(mapper.hasManifest() ? manifest.modelClass() : "");
  w.Key("path").String(options.manifest_path);
  w.EndObject();
  w.Key("model").BeginObject();
  w.Key("mapped").Integer(mapper.mappedCount());
  w.Key("nodes").Integer(graph.size());
  w.Key("opset").Integer(graph.opset());
  w.Key("path").String(options.model_path);
  w.Key("producer").String(absl::StrCat(graph.producerName(), " ", graph.producerVersion()));
  w.EndObject();
  w.Key("modules").BeginObject();
  Integers(w.Key("class"), class_name);
  module_column(w.Key("depth"), [](const TreeModule& m) { return m.depth; });
  Confidences(w.Key("mean_confidence"), subtree, /*mean=*/true);
  Confidences(w.Key("min_confidence"), subtree, /*mean=*/false);
  op_column(w.Key("op_types"), op_types);
  Confidences(w.Key("own_mean_confidence"), own, /*mean=*/true);
  Confidences(w.Key("own_min_confidence"), own, /*mean=*/false);
  module_column(w.Key("own_nodes"), [](const TreeModule& m) { return m.own_nodes; });
  op_column(w.Key("own_op_types"), own_op_types);
  module_column(w.Key("own_parameters"), [](const TreeModule& m) { return m.own_parameters; });
  if (profile != nullptr) {
    module_column(w.Key("own_time_us"),
                  [&](const TreeModule& m) { return profile->modules[m.module].own_us; });
  }
  module_column(w.Key("parent"), [](const TreeModule& m) { return m.parent; });
  w.Key("path").BeginArray();
  for (const TreeModule& m : mods) w.String(tree.info(m).path);
  w.EndArray();
  Integers(w.Key("qualified_class"), qualified);
  module_column(w.Key("subtree_nodes"), [](const TreeModule& m) { return m.subtree_nodes; });
  module_column(w.Key("subtree_parameters"),
                [](const TreeModule& m) { return m.subtree_parameters; });
  if (profile != nullptr) {
    module_column(w.Key("time_us"),
                  [&](const TreeModule& m) { return profile->modules[m.module].subtree_us; });
  }
  w.EndObject();
  w.Key("nodes").BeginObject();
  Integers(w.Key("category"), node_category);
  w.Key("conf").BeginArray();
  for (std::size_t i = 0; i < graph.size(); ++i) {
    w.Number(mapper.moduleFor(static_cast<NodeId>(i)).confidence);
  }
  w.EndArray();
  Integers(w.Key("evidence"), node_evidence);
  w.Key("id").BeginArray();
  for (const Node& n : graph.nodes()) {
    if (n.id == n.name) {
      w.Null();
    } else {
      w.String(n.id);
    }
  }
  w.EndArray();
  Integers(w.Key("m"), node_module);
  w.Key("name").BeginArray();
  for (const Node& n : graph.nodes()) w.String(n.name);
  w.EndArray();
  Integers(w.Key("op"), node_op);
  Integers(w.Key("strategy"), node_strategy);
  Integers(w.Key("subgraph"), node_subgraph);
  if (profile != nullptr) Integers(w.Key("time_us"), profile->node_us);
  w.EndObject();
  if (options.numerics != nullptr) {
    internal::WriteNumericsData(w.Key("numerics"), *options.numerics, tree, options.numerics_path,
                                options.model_path);
  }
  if (profile != nullptr) {
    w.Key("profile").BeginObject();
    w.Key("attributed_nodes").Integer(profile->attributed_nodes);
    w.Key("attributed_us").Integer(profile->attributed_us);
    w.Key("kernel_us").Integer(profile->kernel_us);
    w.Key("path").String(options.profile_path);
    w.Key("profiled_nodes").Integer(profile->profiled_nodes);
    w.EndObject();
  }
  w.Key("schema_version").Integer(2);
  w.Key("strings").Strings(strings.list);
  w.EndObject();
  return text;
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
       {options.profile_path, "the profile"},
       {options.numerics_path, "the numerics"}},
      options.protected_paths, options.allow_overwrite));
  return internal::WriteFileAtomically(output, ReportHtml(mapper, options));
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(output, "writing the report");
} catch (const std::length_error&) {
  return internal::OutOfMemory(output, "writing the report");
}

}  // namespace semmap
