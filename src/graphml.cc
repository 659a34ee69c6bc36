#include "semmap/graphml.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "internal/atomic_write.h"
#include "internal/out_of_memory.h"
#include "internal/status_macros.h"
#include "semmap/tree.h"

namespace semmap {
namespace {

void AppendCodePoint(std::string* out, std::uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// Decodes one UTF-8 sequence at text[*i]; advances *i. Returns 0xFFFD for
// malformed, overlong or surrogate sequences.
std::uint32_t NextCodePoint(absl::string_view text, std::size_t* i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(*i);
  int length = 0;
  std::uint32_t cp = 0, min = 0;
  if (c < 0x80) {
    ++*i;
    return c;
  } else if ((c & 0xe0) == 0xc0) {
    length = 2, cp = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    length = 3, cp = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    length = 4, cp = c & 0x07, min = 0x10000;
  } else {
    ++*i;
    return 0xfffd;
  }
  if (*i + length > text.size()) {
    ++*i;
    return 0xfffd;
  }
  for (int k = 1; k < length; ++k) {
    if ((byte(*i + k) & 0xc0) != 0x80) {
      ++*i;
      return 0xfffd;
    }
    cp = (cp << 6) | (byte(*i + k) & 0x3f);
  }
  *i += length;
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0xfffd;
  return cp;
}

// Text and attribute content: markup escaped; what XML 1.0 cannot hold
// (invalid UTF-8, most C0 controls, U+FFFE/U+FFFF) becomes U+FFFD.
std::string Xml(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = NextCodePoint(text, &i);
    switch (cp) {
      case '&': out += "&amp;"; continue;
      case '<': out += "&lt;"; continue;
      case '>': out += "&gt;"; continue;
      case '"': out += "&quot;"; continue;
      case '\'': out += "&apos;"; continue;
      default: break;
    }
    const bool allowed = cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp < 0xfffe) ||
                         cp >= 0x10000;
    AppendCodePoint(&out, allowed ? cp : 0xfffd);
  }
  return out;
}

struct Key {
  const char* id;
  const char* for_what;
  const char* name;
  const char* type;
};
constexpr Key kKeys[] = {
    {"kind", "node", "kind", "string"},       {"label", "node", "label", "string"},
    {"module", "node", "module", "string"},   {"class", "node", "class", "string"},
    {"collapsed", "node", "collapsed", "boolean"}, {"nodes", "node", "nodes", "long"},
    {"op_type", "node", "op_type", "string"}, {"domain", "node", "domain", "string"},
    {"name", "node", "name", "string"},       {"category", "node", "category", "string"},
    {"confidence", "node", "confidence", "double"}, {"strategy", "node", "strategy", "string"},
    {"time_us", "node", "time_us", "long"},   {"tensor", "edge", "tensor", "string"},
};

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void Indent(int depth) { out_->append(2 * static_cast<std::size_t>(depth), ' '); }
  void Data(int depth, const char* key, absl::string_view value) {
    Indent(depth);
    absl::StrAppend(out_, "<data key=\"", key, "\">", Xml(value), "</data>\n");
  }
  template <typename T>
  void Number(int depth, const char* key, T value) {
    Indent(depth);
    absl::StrAppend(out_, "<data key=\"", key, "\">", value, "</data>\n");
  }
  // yEd's own label and shape; networkx reads the label as "label" too.
  void Graphics(int depth, absl::string_view label, bool group) {
    Indent(depth);
    if (group) {
      absl::StrAppend(out_,
                      "<data key=\"yg\"><y:ProxyAutoBoundsNode><y:Realizers active=\"0\">"
                      "<y:GroupNode><y:Fill color=\"#F2F0D8\" transparent=\"false\"/>"
                      "<y:NodeLabel modelName=\"internal\" modelPosition=\"t\">",
                      Xml(label),
                      "</y:NodeLabel><y:Shape type=\"roundrectangle\"/></y:GroupNode>"
                      "</y:Realizers></y:ProxyAutoBoundsNode></data>\n");
    } else {
      absl::StrAppend(out_, "<data key=\"yg\"><y:ShapeNode><y:NodeLabel>", Xml(label),
                      "</y:NodeLabel><y:Shape type=\"roundrectangle\"/></y:ShapeNode></data>\n");
    }
  }
  std::string& out() { return *out_; }

 private:
  std::string* out_;
};

std::string ModuleLabel(const ModuleInfo& info) {
  std::string label = info.path.empty() ? "<root>" : info.path;
  if (!info.class_name.empty()) absl::StrAppend(&label, " (", info.class_name, ")");
  return label;
}

}  // namespace

absl::StatusOr<std::string> GraphmlText(const SemanticMapper& mapper,
                                        const GraphmlOptions& options,
                                        GraphmlResult* result) try {
  if (options.max_depth < -1 || options.max_depth == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_depth must be -1 (no limit) or at least 1, got ", options.max_depth));
  }
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  const ProfileAttribution* profile = options.profile;
  if (profile != nullptr &&
      (profile->node_us.size() != graph.size() || profile->modules.size() != manifest.size())) {
    return absl::InvalidArgumentError("the profile attribution is of another graph or manifest");
  }
  GraphmlResult counts;
  const int max_depth = options.max_depth;

  // The module each main-graph op is drawn in (kNoModule: top level), and
  // the collapsed module standing for it, if any.
  const std::size_t n = graph.size();
  std::vector<ModuleId> home(n, kNoModule);
  std::vector<ModuleId> folded_into(n, kNoModule);
  const std::vector<std::size_t> subtree_nodes =
      CountModuleNodes(mapper, [&graph](NodeId id, const Mapping&) {
        return graph.node(id).subgraph == 0;
      }).subtree;
  std::vector<std::vector<NodeId>> own_ops(manifest.size());
  std::vector<std::map<std::string, std::size_t>> folded_ops(manifest.size());
  for (std::size_t i = 0; i < n; ++i) {
    const NodeId id = static_cast<NodeId>(i);
    if (graph.node(id).subgraph != 0) continue;
    const Mapping& m = mapper.moduleFor(id);
    if (!m.mapped()) continue;
    ModuleId module = m.module;
    if (max_depth >= 0 && manifest.module(module).depth >= max_depth) {
      ModuleId a = module;
      while (manifest.module(a).depth > max_depth) a = manifest.module(a).parent;
      folded_into[i] = a;
      ++folded_ops[a][QualifiedOpType(graph.node(id))];
      continue;
    }
    home[i] = module == manifest.root() ? kNoModule : module;
    if (home[i] != kNoModule) own_ops[module].push_back(id);
  }

  std::string out;
  Writer w(&out);
  out +=
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\"\n"
      "    xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"\n"
      "    xmlns:y=\"http://www.yworks.com/xml/graphml\"\n"
      "    xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns "
      "http://www.yworks.com/xml/schema/graphml/1.1/ygraphml.xsd\">\n";
  for (const Key& k : kKeys) {
    absl::StrAppend(&out, "  <key id=\"", k.id, "\" for=\"", k.for_what, "\" attr.name=\"",
                    k.name, "\" attr.type=\"", k.type, "\"/>\n");
  }
  out += "  <key id=\"yg\" for=\"node\" yfiles.type=\"nodegraphics\"/>\n";
  absl::StrAppend(&out, "  <graph id=\"G\" edgedefault=\"directed\">\n");

  auto op_id = [](NodeId id) { return absl::StrCat("n", id); };
  auto module_id = [](ModuleId id) { return absl::StrCat("m", id); };
  auto write_op = [&](NodeId id, int depth) {
    const Node& node = graph.node(id);
    const Mapping& m = mapper.moduleFor(id);
    w.Indent(depth);
    absl::StrAppend(&out, "<node id=\"", op_id(id), "\">\n");
    w.Data(depth + 1, "kind", "op");
    w.Data(depth + 1, "label", node.op_type);
    w.Data(depth + 1, "name", node.name);
    w.Data(depth + 1, "op_type", node.op_type);
    if (!node.domain.empty()) w.Data(depth + 1, "domain", node.domain);
    if (m.mapped()) {
      w.Data(depth + 1, "module", m.module_path);
      if (!m.class_name.empty()) w.Data(depth + 1, "class", m.class_name);
      if (!m.category.empty()) w.Data(depth + 1, "category", m.category);
    }
    w.Number(depth + 1, "confidence", m.confidence);
    w.Data(depth + 1, "strategy", StrategyName(m.strategy));
    if (profile != nullptr) w.Number(depth + 1, "time_us", profile->node_us[id]);
    w.Graphics(depth + 1, node.op_type, false);
    w.Indent(depth);
    out += "</node>\n";
    ++counts.op_nodes;
  };
  auto module_data = [&](ModuleId id, int depth, bool collapsed) {
    const ModuleInfo& info = manifest.module(id);
    w.Data(depth, "kind", "module");
    w.Data(depth, "label", ModuleLabel(info));
    w.Data(depth, "module", info.path);
    if (!info.class_name.empty()) w.Data(depth, "class", info.class_name);
    w.Data(depth, "collapsed", collapsed ? "true" : "false");
    w.Number(depth, "nodes", subtree_nodes[id]);
    if (profile != nullptr) w.Number(depth, "time_us", profile->modules[id].subtree_us);
    if (collapsed) {
      std::vector<std::pair<std::string, std::size_t>> ops(folded_ops[id].begin(),
                                                           folded_ops[id].end());
      std::stable_sort(ops.begin(), ops.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      std::string mix;
      for (std::size_t k = 0; k < ops.size() && k < 4; ++k) {
        absl::StrAppend(&mix, k ? " " : "", ops[k].first, ":", ops[k].second);
      }
      if (ops.size() > 4) mix += " ...";
      w.Data(depth, "op_type", mix);
    }
  };

  // Modules, depth first with an explicit stack (any nesting depth).
  struct Frame {
    ModuleId module;
    std::size_t next_child;
    int depth;  // indentation
  };
  std::vector<Frame> stack;
  auto open_children = [&](ModuleId parent, int depth) { stack.push_back({parent, 0, depth}); };
  // Top level: the root's own ops are written with the unmapped ones below.
  open_children(manifest.root(), 2);
  while (!stack.empty()) {
    Frame& f = stack.back();
    const std::vector<ModuleId>& children = manifest.module(f.module).children;
    if (f.next_child == children.size()) {
      const ModuleId done = f.module;
      const int depth = f.depth;
      stack.pop_back();
      if (done != manifest.root()) {
        w.Indent(depth - 1);
        out += "</graph>\n";
        w.Indent(depth - 2);
        out += "</node>\n";
      }
      continue;
    }
    const ModuleId child = children[f.next_child++];
    const int depth = f.depth;
    if (subtree_nodes[child] == 0) continue;
    const ModuleInfo& info = manifest.module(child);
    if (max_depth >= 0 && info.depth >= max_depth) {
      w.Indent(depth);
      absl::StrAppend(&out, "<node id=\"", module_id(child), "\">\n");
      module_data(child, depth + 1, true);
      w.Graphics(depth + 1, ModuleLabel(info), false);
      w.Indent(depth);
      out += "</node>\n";
      ++counts.collapsed_modules;
      continue;
    }
    w.Indent(depth);
    absl::StrAppend(&out, "<node id=\"", module_id(child), "\" yfiles.foldertype=\"group\">\n");
    module_data(child, depth + 1, false);
    w.Graphics(depth + 1, ModuleLabel(info), true);
    w.Indent(depth + 1);
    // "cluster_" makes Graphviz (graphml2gv | dot) draw the nesting as boxes.
    absl::StrAppend(&out, "<graph id=\"cluster_", module_id(child),
                    "\" edgedefault=\"directed\">\n");
    ++counts.module_groups;
    for (NodeId op : own_ops[child]) write_op(op, depth + 2);
    open_children(child, depth + 2);
  }
  // Root ops and unmapped ops.
  for (std::size_t i = 0; i < n; ++i) {
    const NodeId id = static_cast<NodeId>(i);
    if (graph.node(id).subgraph == 0 && home[i] == kNoModule && folded_into[i] == kNoModule) {
      write_op(id, 2);
    }
  }
  // Graph inputs and outputs.
  for (std::size_t k = 0; k < graph.inputs().size(); ++k) {
    absl::StrAppend(&out, "    <node id=\"i", k, "\">\n");
    w.Data(3, "kind", "input");
    w.Data(3, "label", graph.inputs()[k]);
    w.Data(3, "name", graph.inputs()[k]);
    w.Graphics(3, graph.inputs()[k], false);
    out += "    </node>\n";
    ++counts.io_nodes;
  }
  for (std::size_t k = 0; k < graph.outputs().size(); ++k) {
    absl::StrAppend(&out, "    <node id=\"o", k, "\">\n");
    w.Data(3, "kind", "output");
    w.Data(3, "label", graph.outputs()[k]);
    w.Data(3, "name", graph.outputs()[k]);
    w.Graphics(3, graph.outputs()[k], false);
    out += "    </node>\n";
    ++counts.io_nodes;
  }

  // Edges: (source, target, value), each once.
  auto drawn = [&](NodeId id) {
    return folded_into[id] != kNoModule ? module_id(folded_into[id]) : op_id(id);
  };
  std::set<std::tuple<std::string, std::string, std::string>> edges;
  auto add_edges_from = [&](const std::string& source, absl::string_view value) {
    for (NodeId c : graph.consumers(value, 0)) {
      if (graph.node(c).subgraph != 0) continue;
      std::string target = drawn(c);
      if (target == source) continue;
      edges.emplace(source, std::move(target), value);
    }
  };
  for (std::size_t k = 0; k < graph.inputs().size(); ++k) {
    add_edges_from(absl::StrCat("i", k), graph.inputs()[k]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const NodeId id = static_cast<NodeId>(i);
    if (graph.node(id).subgraph != 0) continue;
    const std::string source = drawn(id);
    for (absl::string_view value : graph.node(id).outputs) {
      if (!value.empty()) add_edges_from(source, value);
    }
  }
  for (std::size_t k = 0; k < graph.outputs().size(); ++k) {
    const absl::string_view value = graph.outputs()[k];
    const NodeId p = graph.producer(value, 0);
    std::string source;
    if (p != kNoNode) {
      source = drawn(p);
    } else {
      auto in = std::find(graph.inputs().begin(), graph.inputs().end(), value);
      if (in == graph.inputs().end()) continue;  // an initializer
      source = absl::StrCat("i", in - graph.inputs().begin());
    }
    edges.emplace(std::move(source), absl::StrCat("o", k), value);
  }
  std::size_t e = 0;
  for (const auto& [source, target, value] : edges) {
    absl::StrAppend(&out, "    <edge id=\"e", e++, "\" source=\"", source, "\" target=\"", target,
                    "\">\n");
    w.Data(3, "tensor", value);
    out += "    </edge>\n";
  }
  counts.edges = edges.size();
  out += "  </graph>\n</graphml>\n";
  counts.bytes = out.size();
  if (result != nullptr) *result = counts;
  return out;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory("graphml", "writing the GraphML document");
} catch (const std::length_error&) {
  return internal::OutOfMemory("graphml", "writing the GraphML document");
}

absl::StatusOr<GraphmlResult> WriteGraphml(const SemanticMapper& mapper,
                                           const std::string& output,
                                           const GraphmlOptions& options) {
  SEMMAP_RETURN_IF_ERROR(internal::CheckOutputPath(output));
  if (!options.allow_overwrite) {
    for (const std::string& input : options.protected_paths) {
      if (input.empty()) continue;
      SEMMAP_RETURN_IF_ERROR(internal::CheckNotSameFile(output, input, "an input file"));
    }
  }
  GraphmlResult result;
  absl::StatusOr<std::string> text = GraphmlText(mapper, options, &result);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat(output, ": ", text.status().message()));
  }
  SEMMAP_RETURN_IF_ERROR(internal::WriteFileAtomically(output, *text));
  return result;
}

}  // namespace semmap
