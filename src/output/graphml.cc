#include "semmap/graphml.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "io/atomic_write.h"
#include "io/json_writer.h"
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
  std::string label = info.path.empty() ? "<root>" : std::string(info.path);
  if (!info.class_name.empty()) absl::StrAppend(&label, " (", info.class_name, ")");
  return label;
}

// The GraphML document of one mapping, written top to bottom: the header
// and keys, the module groups (nested graphs) with their ops, the
// top-level and unmapped ops, the inputs and outputs, then the edges.
class GraphmlDocument {
 public:
  GraphmlDocument(const SemanticMapper& mapper, const GraphmlOptions& options)
      : graph_(mapper.graph()),
        manifest_(mapper.manifest()),
        mapper_(mapper),
        profile_(options.profile),
        max_depth_(options.max_depth),
        w_(&out_) {}

  std::string Write(GraphmlResult* counts) {
    Place();
    WriteHeader();
    WriteModules();
    WriteTopLevel();
    WriteEdges();
    out_ += "  </graph>\n</graphml>\n";
    counts_.bytes = out_.size();
    *counts = counts_;
    return std::move(out_);
  }

 private:
  static std::string OpId(NodeId id) { return absl::StrCat("n", id); }
  static std::string ModuleXmlId(ModuleId id) { return absl::StrCat("m", id); }

  // The module each main-graph op is drawn in (kNoModule: top level), and
  // the collapsed module standing for it, if any.
  void Place() {
    const std::size_t n = graph_.size();
    home_.assign(n, kNoModule);
    folded_into_.assign(n, kNoModule);
    subtree_nodes_ = CountModuleNodes(mapper_, [this](NodeId id, const Mapping&) {
                       return graph_.node(id).subgraph == 0;
                     }).subtree;
    own_ops_.resize(manifest_.size());
    folded_ops_.resize(manifest_.size());
    for (std::size_t i = 0; i < n; ++i) {
      const NodeId id = static_cast<NodeId>(i);
      if (graph_.node(id).subgraph != 0) continue;
      const Mapping& m = mapper_.moduleFor(id);
      if (!m.mapped()) continue;
      ModuleId module = m.module;
      if (max_depth_ >= 0 && manifest_.depth(module) >= max_depth_) {
        ModuleId a = module;
        while (manifest_.depth(a) > max_depth_) a = manifest_.parent(a);
        folded_into_[i] = a;
        ++folded_ops_[a][QualifiedOpType(graph_.node(id))];
        continue;
      }
      home_[i] = module == manifest_.root() ? kNoModule : module;
      if (home_[i] != kNoModule) own_ops_[module].push_back(id);
    }
  }

  void WriteHeader() {
    out_ +=
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\"\n"
        "    xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"\n"
        "    xmlns:y=\"http://www.yworks.com/xml/graphml\"\n"
        "    xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns "
        "http://www.yworks.com/xml/schema/graphml/1.1/ygraphml.xsd\">\n";
    for (const Key& k : kKeys) {
      absl::StrAppend(&out_, "  <key id=\"", k.id, "\" for=\"", k.for_what, "\" attr.name=\"",
                      k.name, "\" attr.type=\"", k.type, "\"/>\n");
    }
    out_ += "  <key id=\"yg\" for=\"node\" yfiles.type=\"nodegraphics\"/>\n";
    absl::StrAppend(&out_, "  <graph id=\"G\" edgedefault=\"directed\">\n");
  }

  void WriteOp(NodeId id, int depth) {
    const Node& node = graph_.node(id);
    const Mapping& m = mapper_.moduleFor(id);
    w_.Indent(depth);
    absl::StrAppend(&out_, "<node id=\"", OpId(id), "\">\n");
    w_.Data(depth + 1, "kind", "op");
    w_.Data(depth + 1, "label", node.op_type);
    w_.Data(depth + 1, "name", node.name);
    w_.Data(depth + 1, "op_type", node.op_type);
    if (!node.domain.empty()) w_.Data(depth + 1, "domain", node.domain);
    if (m.mapped()) {
      w_.Data(depth + 1, "module", m.module_path);
      if (!m.class_name.empty()) w_.Data(depth + 1, "class", m.class_name);
      if (!m.category.empty()) w_.Data(depth + 1, "category", m.category);
    }
    w_.Number(depth + 1, "confidence", m.confidence);
    w_.Data(depth + 1, "strategy", StrategyName(m.strategy));
    if (profile_ != nullptr) w_.Number(depth + 1, "time_us", profile_->node_us[id]);
    w_.Graphics(depth + 1, node.op_type, false);
    w_.Indent(depth);
    out_ += "</node>\n";
    ++counts_.op_nodes;
  }

  void WriteModuleData(ModuleId id, int depth, bool collapsed) {
    const ModuleInfo& info = manifest_.module(id);
    w_.Data(depth, "kind", "module");
    w_.Data(depth, "label", ModuleLabel(info));
    w_.Data(depth, "module", info.path);
    if (!info.class_name.empty()) w_.Data(depth, "class", info.class_name);
    w_.Data(depth, "collapsed", collapsed ? "true" : "false");
    w_.Number(depth, "nodes", subtree_nodes_[id]);
    if (profile_ != nullptr) w_.Number(depth, "time_us", profile_->modules[id].subtree_us);
    if (collapsed) {
      std::vector<std::pair<std::string, std::size_t>> ops(folded_ops_[id].begin(),
                                                           folded_ops_[id].end());
      std::stable_sort(ops.begin(), ops.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      std::string mix;
      for (std::size_t k = 0; k < ops.size() && k < 4; ++k) {
        absl::StrAppend(&mix, k ? " " : "", ops[k].first, ":", ops[k].second);
      }
      if (ops.size() > 4) mix += " ...";
      w_.Data(depth, "op_type", mix);
    }
  }

  // A module's node, opened, with its data: a group (nested graph to
  // follow) or, collapsed, one node for its whole subtree.
  void OpenModuleNode(ModuleId child, int depth, bool collapsed) {
    w_.Indent(depth);
    absl::StrAppend(&out_, "<node id=\"", ModuleXmlId(child), "\"",
                    collapsed ? "" : " yfiles.foldertype=\"group\"", ">\n");
    WriteModuleData(child, depth + 1, collapsed);
    w_.Graphics(depth + 1, ModuleLabel(manifest_.module(child)), !collapsed);
  }

  // A module below the depth limit.
  void WriteCollapsed(ModuleId child, int depth) {
    OpenModuleNode(child, depth, true);
    w_.Indent(depth);
    out_ += "</node>\n";
    ++counts_.collapsed_modules;
  }

  // A module group: opens its node and nested graph and writes its own ops;
  // its children and the closing tags follow.
  void OpenGroup(ModuleId child, int depth) {
    OpenModuleNode(child, depth, false);
    w_.Indent(depth + 1);
    // "cluster_" makes Graphviz (graphml2gv | dot) draw the nesting as boxes.
    absl::StrAppend(&out_, "<graph id=\"cluster_", ModuleXmlId(child),
                    "\" edgedefault=\"directed\">\n");
    ++counts_.module_groups;
    for (NodeId op : own_ops_[child]) WriteOp(op, depth + 2);
  }

  // Modules, depth first with an explicit stack (any nesting depth).
  void WriteModules() {
    struct Frame {
      ModuleId module;
      std::size_t next_child;
      int depth;  // indentation
    };
    // Top level: the root's own ops are written with the unmapped ones.
    std::vector<Frame> stack = {{manifest_.root(), 0, 2}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      const absl::Span<const ModuleId> children = manifest_.children(f.module);
      if (f.next_child == children.size()) {
        const ModuleId done = f.module;
        const int depth = f.depth;
        stack.pop_back();
        if (done != manifest_.root()) {
          w_.Indent(depth - 1);
          out_ += "</graph>\n";
          w_.Indent(depth - 2);
          out_ += "</node>\n";
        }
        continue;
      }
      const ModuleId child = children[f.next_child++];
      const int depth = f.depth;
      if (subtree_nodes_[child] == 0) continue;
      if (max_depth_ >= 0 && manifest_.depth(child) >= max_depth_) {
        WriteCollapsed(child, depth);
        continue;
      }
      OpenGroup(child, depth);
      stack.push_back({child, 0, depth + 2});
    }
  }

  // Root ops and unmapped ops, then the graph's inputs and outputs.
  void WriteTopLevel() {
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      const NodeId id = static_cast<NodeId>(i);
      if (graph_.node(id).subgraph == 0 && home_[i] == kNoModule &&
          folded_into_[i] == kNoModule) {
        WriteOp(id, 2);
      }
    }
    for (std::size_t k = 0; k < graph_.inputs().size(); ++k) WriteIo("i", "input", k, graph_.inputs()[k]);
    for (std::size_t k = 0; k < graph_.outputs().size(); ++k) {
      WriteIo("o", "output", k, graph_.outputs()[k]);
    }
  }

  void WriteIo(const char* prefix, const char* kind, std::size_t k, absl::string_view name) {
    absl::StrAppend(&out_, "    <node id=\"", prefix, k, "\">\n");
    w_.Data(3, "kind", kind);
    w_.Data(3, "label", name);
    w_.Data(3, "name", name);
    w_.Graphics(3, name, false);
    out_ += "    </node>\n";
    ++counts_.io_nodes;
  }

  // The node an op is drawn as: itself, or the collapsed module holding it.
  std::string Drawn(NodeId id) const {
    return folded_into_[id] != kNoModule ? ModuleXmlId(folded_into_[id]) : OpId(id);
  }

  // Edges: (source, target, value), each once.
  void WriteEdges() {
    std::set<std::tuple<std::string, std::string, std::string>> edges;
    auto add_edges_from = [&](const std::string& source, absl::string_view value) {
      for (NodeId c : graph_.consumers(value, 0)) {
        if (graph_.node(c).subgraph != 0) continue;
        std::string target = Drawn(c);
        if (target == source) continue;
        edges.emplace(source, std::move(target), value);
      }
    };
    for (std::size_t k = 0; k < graph_.inputs().size(); ++k) {
      add_edges_from(absl::StrCat("i", k), graph_.inputs()[k]);
    }
    for (std::size_t i = 0; i < graph_.size(); ++i) {
      const NodeId id = static_cast<NodeId>(i);
      if (graph_.node(id).subgraph != 0) continue;
      const std::string source = Drawn(id);
      for (absl::string_view value : graph_.node(id).outputs) {
        if (!value.empty()) add_edges_from(source, value);
      }
    }
    for (std::size_t k = 0; k < graph_.outputs().size(); ++k) {
      const absl::string_view value = graph_.outputs()[k];
      const NodeId p = graph_.producer(value, 0);
      std::string source;
      if (p != kNoNode) {
        source = Drawn(p);
      } else {
        auto in = std::find(graph_.inputs().begin(), graph_.inputs().end(), value);
        if (in == graph_.inputs().end()) continue;  // an initializer
        source = absl::StrCat("i", in - graph_.inputs().begin());
      }
      edges.emplace(std::move(source), absl::StrCat("o", k), value);
    }
    std::size_t e = 0;
    for (const auto& [source, target, value] : edges) {
      absl::StrAppend(&out_, "    <edge id=\"e", e++, "\" source=\"", source, "\" target=\"",
                      target, "\">\n");
      w_.Data(3, "tensor", value);
      out_ += "    </edge>\n";
    }
    counts_.edges = edges.size();
  }

  const Graph& graph_;
  const Manifest& manifest_;
  const SemanticMapper& mapper_;
  const ProfileAttribution* profile_;
  const int max_depth_;
  std::string out_;
  Writer w_;
  GraphmlResult counts_;
  std::vector<ModuleId> home_;
  std::vector<ModuleId> folded_into_;
  std::vector<std::size_t> subtree_nodes_;
  std::vector<std::vector<NodeId>> own_ops_;
  std::vector<std::map<std::string, std::size_t>> folded_ops_;
};

}  // namespace

absl::StatusOr<std::string> GraphmlText(const SemanticMapper& mapper,
                                        const GraphmlOptions& options,
                                        GraphmlResult* result) try {
  if (options.max_depth < -1 || options.max_depth == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_depth must be -1 (no limit) or at least 1, got ", options.max_depth));
  }
  const ProfileAttribution* profile = options.profile;
  if (profile != nullptr && (profile->node_us.size() != mapper.graph().size() ||
                             profile->modules.size() != mapper.manifest().size())) {
    return absl::InvalidArgumentError("the profile attribution is of another graph or manifest");
  }
  GraphmlResult counts;
  std::string out = GraphmlDocument(mapper, options).Write(&counts);
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
  SEMMAP_RETURN_IF_ERROR(
      internal::CheckOutputFor(output, {}, options.protected_paths, options.allow_overwrite));
  GraphmlResult result;
  absl::StatusOr<std::string> text = GraphmlText(mapper, options, &result);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat(output, ": ", text.status().message()));
  }
  SEMMAP_RETURN_IF_ERROR(internal::WriteFileAtomically(output, *text));
  return result;
}

std::string GraphmlResultJson(const GraphmlResult& result, const GraphmlOptions& options,
                              const std::string& model, const std::string& output) {
  std::string text;
  internal::JsonWriter w(&text);
  w.BeginObject();
  w.Key("bytes").Integer(result.bytes);
  w.Key("collapsed_modules").Integer(result.collapsed_modules);
  w.Key("depth").Integer(options.max_depth);
  w.Key("edges").Integer(result.edges);
  w.Key("io_nodes").Integer(result.io_nodes);
  w.Key("model").String(model);
  w.Key("module_groups").Integer(result.module_groups);
  w.Key("op_nodes").Integer(result.op_nodes);
  w.Key("output").String(output);
  w.EndObject();
  return text;
}

}  // namespace semmap
