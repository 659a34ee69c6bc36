#include "semmap/annotate.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "graph/wire_writer.h"
#include "io/atomic_write.h"
#include "io/json_writer.h"
#include "io/mapped_file.h"
#include "io/paths.h"
#include "manifest/rule_queries.h"
#include "mapping/core/scope_resolver.h"
#include "semmap/scope_path.h"
#include "semmap/tree.h"

namespace semmap {
namespace {

constexpr char kNamespaceKey[] = "namespace";
// Earlier versions wrote "semmap.module", "semmap.class", ...: replaced too.
constexpr char kLegacyKeyPrefix[] = "semmap.";

std::string ConfidenceText(double confidence) { return absl::StrCat(confidence); }

bool IsNumber(absl::string_view atom) {
  return !atom.empty() && std::all_of(atom.begin(), atom.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// The TorchScript scope segments of a module path relative to the binding's
// root: one segment per module scope, each the variable name torch gives it
// (a numeric atom joins the segment before it: "encoder.layer.0.attention"
// -> {"encoder", "layer.0", "attention"}).
std::vector<std::string> SegmentsOf(absl::string_view relative_path) {
  std::vector<std::string> out;
  if (relative_path.empty()) return out;
  for (absl::string_view atom : absl::StrSplit(relative_path, '.')) {
    if (!out.empty() && IsNumber(atom)) {
      absl::StrAppend(&out.back(), ".", atom);
    } else {
      out.emplace_back(atom);
    }
  }
  return out;
}

// The last part of a scoped name: the whole old name, with '%' and '/'
// written "%25" and "%2F" (a '/' would start another scope, and the old
// name stays readable from the new one: "a/b/c" -> ".../a%2Fb%2Fc"); the op
// type when the node has no name.
std::string LeafOf(const Node& n) {
  if (n.name.empty()) {
    if (n.op_type.empty()) return "node";
    std::string op(n.op_type);  // an op type is not checked for '/'
    std::replace(op.begin(), op.end(), '/', '_');
    return op;
  }
  std::string leaf;
  leaf.reserve(n.name.size());
  for (const char c : n.name) {
    if (c == '%') {
      leaf += "%25";
    } else if (c == '/') {
      leaf += "%2F";
    } else {
      leaf += c;
    }
  }
  return leaf;
}

// Whether `name` is read by the mapper as a scope (mapper.cc, ScopeOf) that
// resolves to `module` completely.
bool ResolvesTo(absl::string_view name, ModuleId module, const internal::ScopeResolver& resolver,
                const RootBinding& binding, const Rules& rules) {
  if (name.empty() || name.front() != '/' || internal::RuleQueries(rules).IsDerivedNodeName(name)) return false;
  const ScopePath path = ScopePath::Parse(name);
  if (path.truncated()) return false;
  const internal::ScopeResolution r =
      resolver.Resolve(path.segments(), binding.root, binding.wrapper);
  return r.complete() && r.module == module;
}

// The scope part of a name ("/encoder/layer.0/query", "" for the root) that
// maps to `module` the same with and without the manifest; nullopt when
// there is none.
std::optional<std::string> ScopedPrefix(const Manifest& manifest, ModuleId module, const RootBinding& binding,
                         const internal::ScopeResolver& resolver) {
  if (!manifest.isAncestorOrSelf(binding.root, module)) return std::nullopt;
  const absl::string_view root_path = manifest.path(binding.root);
  absl::string_view relative = manifest.path(module);
  if (!root_path.empty()) {
    if (relative.size() == root_path.size()) {
      relative = "";
    } else {
      relative.remove_prefix(root_path.size() + 1);
    }
  }
  std::vector<std::string> segments = binding.wrapper;
  const std::vector<std::string> own = SegmentsOf(relative);
  segments.insert(segments.end(), own.begin(), own.end());
  for (const std::string& segment : segments) {
    if (segment.empty() || absl::StrContains(segment, '/')) return std::nullopt;
  }
  std::vector<absl::string_view> views(segments.begin(), segments.end());
  // With the manifest: every step lands on the module's own scope.
  const internal::ScopeResolution r = resolver.Resolve(views, binding.root, binding.wrapper);
  if (!r.complete() || r.module != module || r.ambiguous || r.call_suffix) return std::nullopt;
  // Without it: the segments joined give the path (wrapper included).
  const std::string expected =
      binding.wrapper.empty()
          ? std::string(relative)
          : absl::StrCat(absl::StrJoin(binding.wrapper, "."), relative.empty() ? "" : ".",
                         relative);
  if (DottedPathOf(views) != expected) return std::nullopt;
  std::string prefix;
  for (const std::string& segment : segments) absl::StrAppend(&prefix, "/", segment);
  return prefix;
}


// The `namespace` entries an exporter wrote (the dynamo exporter's
// ": <root class>/<path>: <class>/.../<fx node>: <target>"): which nodes
// carry one that names modules of the manifest, and how each module's level
// is spelled there.
struct ExporterSpelling {
  bool any = false;
  std::vector<bool> valid;                          // per NodeId
  absl::flat_hash_map<ModuleId, std::string> level;  // module -> its element
};

// The module levels of an exporter namespace: every element but the last
// (the operator). False unless each is "<path>: <qualified class>" naming a
// module of the manifest and its class, the first the root. (semmap's
// compact spelling has relative paths and short classes: never valid.)
bool ParseExporterLevels(absl::string_view ns, const Manifest& manifest,
                         std::vector<std::pair<ModuleId, absl::string_view>>* levels) {
  levels->clear();
  std::vector<absl::string_view> elements = absl::StrSplit(ns, '/');
  if (elements.size() < 2) return false;
  elements.pop_back();
  for (absl::string_view element : elements) {
    const std::size_t colon = element.find(": ");
    if (colon == absl::string_view::npos) return false;
    const ModuleId id = manifest.find(element.substr(0, colon));
    if (id == kNoModule || (levels->empty() && id != manifest.root()) ||
        manifest.module(id).qualified_class != element.substr(colon + 2)) {
      return false;
    }
    levels->emplace_back(id, element);
  }
  return true;
}

ExporterSpelling ReadExporterSpelling(const Graph& graph, const Manifest& manifest) {
  ExporterSpelling out;
  out.valid.assign(graph.size(), false);
  std::vector<std::pair<ModuleId, absl::string_view>> levels;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    for (const auto& [key, value] : graph.node(static_cast<NodeId>(i)).metadata) {
      if (key != kNamespaceKey || !ParseExporterLevels(value, manifest, &levels)) continue;
      out.valid[i] = true;
      out.any = true;
      for (const auto& [id, element] : levels) out.level.try_emplace(id, element);
    }
  }
  return out;
}

// Spells the namespace of a module, once per module. Two spellings:
//  - the exporter's, where the file has exporter namespaces: the levels
//    and their text exactly as the exporter wrote them, so a viewer shows
//    each module at one place whichever of the two wrote a node's entry;
//    modules the exporter never shows as a level are left out, unless no
//    node of the file reaches them through an exporter namespace at all;
//  - compact otherwise: "<atoms>: <class>" per level, the atoms relative to
//    the level above ("layer.0", as TorchScript scopes read), the class
//    short; without a manifest the atoms alone and no root level, which is
//    the TorchScript scope itself.
// Both skip containers that are never called (Rules::isUncalledModule;
// without classes, modules whose children are all numbered).
class NamespaceSpeller {
 public:
  NamespaceSpeller(const SemanticMapper& mapper, const Rules& rules,
                   const ExporterSpelling& exporter)
      : manifest_(mapper.manifest()), rules_(rules), exporter_(exporter),
        has_classes_(mapper.hasManifest()) {
    // Modules below some exporter level: their ancestors that are not
    // levels themselves were left out by the exporter.
    below_level_.assign(manifest_.size(), false);
    for (const auto& entry : exporter.level) {
      for (ModuleId id = manifest_.parent(entry.first); id != kNoModule;
           id = manifest_.parent(id)) {
        if (below_level_[id]) break;
        below_level_[id] = true;
      }
    }
  }

  // A copy: the cache may rehash on the next call.
  std::string For(ModuleId module) const {
    auto it = cache_.find(module);
    if (it != cache_.end()) return it->second;
    std::vector<ModuleId> chain;
    for (ModuleId id = module; id != kNoModule; id = manifest_.parent(id)) {
      if (IsLevel(id)) chain.push_back(id);
    }
    std::string out;
    absl::string_view above;  // path of the level above
    for (auto c = chain.rbegin(); c != chain.rend(); ++c) {
      const ModuleInfo& info = manifest_.module(*c);
      if (!out.empty()) out.push_back('/');
      absl::StrAppend(&out, Element(*c, info, above));
      above = info.path;
    }
    cache_.emplace(module, out);
    return out;
  }

 private:
  bool IsLevel(ModuleId id) const {
    const ModuleInfo& info = manifest_.module(id);
    if (id == manifest_.root()) return has_classes_;
    if (exporter_.any) {
      if (exporter_.level.contains(id)) return true;
      if (below_level_[id]) return false;
    }
    if (!info.qualified_class.empty()) return !internal::RuleQueries(rules_).IsUncalledModule(info);
    return !info.numbered_children;
  }

  std::string Element(ModuleId id, const ModuleInfo& info, absl::string_view above) const {
    if (exporter_.any) {
      auto it = exporter_.level.find(id);
      if (it != exporter_.level.end()) return it->second;
      return absl::StrCat(info.path, ": ", info.qualified_class);
    }
    absl::string_view atoms = info.path;
    if (!above.empty() && absl::StartsWith(atoms, above) && atoms.size() > above.size()) {
      atoms.remove_prefix(above.size() + 1);
    }
    // '/' separates levels: a path atom cannot hold one, a hostile one is
    // replaced rather than splitting the level.
    std::string text(atoms);
    std::replace(text.begin(), text.end(), '/', '_');
    if (info.class_name.empty()) return text;
    return absl::StrCat(text, ": ", info.class_name);
  }

  const Manifest& manifest_;
  const Rules& rules_;
  const ExporterSpelling& exporter_;
  const bool has_classes_;
  std::vector<bool> below_level_;
  mutable absl::flat_hash_map<ModuleId, std::string> cache_;
};

}  // namespace

NamespacePlan PlanNamespaces(const SemanticMapper& mapper, const AnnotateOptions& options) {
  const Rules& rules = options.rules != nullptr ? *options.rules : Rules::Default();
  const Graph& graph = mapper.graph();
  NamespacePlan plan;
  plan.values.resize(graph.size());
  if (!options.write_namespace) return plan;
  const ExporterSpelling exporter = ReadExporterSpelling(graph, mapper.manifest());
  plan.exporter_spelling = exporter.any;
  const NamespaceSpeller speller(mapper, rules, exporter);
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const Mapping& m = mapper.moduleFor(static_cast<NodeId>(i));
    if (exporter.valid[i] && !options.overwrite_namespace) {
      ++plan.kept;
      continue;
    }
    if (!m.mapped()) continue;
    plan.values[i] = speller.For(m.module);
    ++plan.written;
  }
  return plan;
}

ScopedNamePlan PlanScopedNames(const SemanticMapper& mapper, const AnnotateOptions& options) {
  const Graph& graph = mapper.graph();
  const Manifest& manifest = mapper.manifest();
  const Rules& rules = options.rules != nullptr ? *options.rules : Rules::Default();
  const RootBinding& binding = mapper.rootBinding();
  const internal::ScopeResolver resolver(manifest);
  ScopedNamePlan plan;
  plan.names.resize(graph.size());
  // Every name of the model stays reserved, so a new name never equals an
  // old one: matching files by name before and after stays unambiguous.
  absl::flat_hash_set<std::string> taken;
  for (const Node& n : graph.nodes()) taken.emplace(n.name);
  absl::flat_hash_map<ModuleId, std::optional<std::string>> prefixes;
  for (std::size_t i = 0; i < graph.size(); ++i) {
    const NodeId id = static_cast<NodeId>(i);
    const Node& n = graph.node(id);
    const Mapping& m = mapper.moduleFor(id);
    // A renamed node reads back as an exact scope at confidence 1: below
    // the confident floor that would turn a guess into a certainty.
    if (!m.confident() || !(m.confidence >= options.scoped_name_min_confidence)) {
      ++plan.below_floor;
      continue;
    }
    if (ResolvesTo(n.name, m.module, resolver, binding, rules)) {
      ++plan.kept;
      continue;
    }
    const std::string* prefix = nullptr;
    if (graph.subgraphs()[n.subgraph].kind != Subgraph::Kind::kFunction) {
      auto it = prefixes.find(m.module);
      if (it == prefixes.end()) {
        it = prefixes.emplace(m.module, ScopedPrefix(manifest, m.module, binding, resolver)).first;
      }
      if (it->second.has_value()) prefix = &*it->second;
    }
    if (prefix == nullptr) {
      ++plan.not_expressible;
      continue;
    }
    const std::string leaf = LeafOf(n);
    std::string name = absl::StrCat(*prefix, "/", leaf);
    for (int k = 1; taken.contains(name); ++k) name = absl::StrCat(*prefix, "/", leaf, "_", k);
    // A name the loader would refuse (GraphOptions::max_name_bytes) would
    // make a file semmap cannot read back.
    if (name.size() > GraphOptions().max_name_bytes) {
      ++plan.not_expressible;
      continue;
    }
    // The last part may still make the name one the mapper does not read
    // as a scope (a derived name) or that parses differently.
    if (!ResolvesTo(name, m.module, resolver, binding, rules)) {
      ++plan.not_expressible;
      continue;
    }
    taken.insert(name);
    plan.names[i] = std::move(name);
    ++plan.renamed;
  }
  return plan;
}

// Long (about 95 lines): the checks, the plan, the per-node editor and the
// write share the mapped file and the result; the pieces that stand alone
// are helpers (PlanNamespaces, the NodeRewrite of wire_writer.h).
absl::StatusOr<AnnotateResult> Annotate(const SemanticMapper& mapper, const std::string& input,
                                        const std::string& output,
                                        const AnnotateOptions& options) {
  // Refuse early, before reading anything, so a bad invocation is cheap.
  if (options.scoped_names && !(options.scoped_name_min_confidence >= kConfidentFloor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scoped names need a floor of at least ", kConfidentFloor, ", got ",
        options.scoped_name_min_confidence,
        ": a renamed node reads back as an exact scope at confidence 1, so a lower "
        "floor would turn guesses into certainties"));
  }
  SEMMAP_RETURN_IF_ERROR(
      internal::CheckOutputFor(output,
                               {{input, "the input model"}, {options.manifest_path, "the manifest"}},
                               options.protected_paths, options.allow_overwrite));
  // The file's own bytes, mapped: edited at the wire level (wire_writer.h),
  // with no size limit of protobuf's and whatever onnx semmap was built with.
  SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile file,
                          internal::MappedFile::Open(input, options.max_file_bytes));

  const Graph& graph = mapper.graph();
  AnnotateResult result;
  ScopedNamePlan plan;
  if (options.scoped_names) {
    plan = PlanScopedNames(mapper, options);
    result.renamed = plan.renamed;
    result.scoped_kept = plan.kept;
  }
  const NamespacePlan namespaces = PlanNamespaces(mapper, options);
  result.namespaces_written = namespaces.written;
  result.namespaces_kept = namespaces.kept;
  const internal::NodeEditor annotate_node = [&](const internal::NodeView& node,
                                                 internal::NodeEdit* edit) -> absl::Status {
    const NodeId next = static_cast<NodeId>(node.index);
    if (node.index >= graph.size() || graph.node(next).name != node.name ||
        graph.node(next).op_type != node.op_type) {
      return absl::FailedPreconditionError(absl::StrCat(
          input, ": node ", node.index, " (\"", internal::Abbreviate(std::string(node.name)),
          "\") differs from the graph that was mapped; was the file changed?"));
    }
    const Mapping& m = mapper.moduleFor(next);
    const std::string& ns = namespaces.values[next];
    edit->drop_keys.assign({std::string(kModuleKey), std::string(kClassKey),
                            std::string(kConfidenceKey), std::string(kStrategyKey),
                            std::string(kCategoryKey), std::string(kOriginsKey)});
    edit->drop_key_prefixes.emplace_back(kLegacyKeyPrefix);
    if (!ns.empty()) edit->drop_keys.emplace_back(kNamespaceKey);
    // namespace before semmap's keys: a second run finds semmap's namespace
    // (spelled as it would write it) and re-appends the others, giving the
    // same bytes (idempotence).
    auto& add = edit->add_metadata;
    if (!ns.empty()) add.emplace_back(kNamespaceKey, ns);
    add.emplace_back(kModuleKey, std::string(m.module_path));
    add.emplace_back(kClassKey, std::string(m.qualified_class));
    add.emplace_back(kConfidenceKey, ConfidenceText(m.confidence));
    add.emplace_back(kStrategyKey, std::string(StrategyName(m.strategy)));
    if (!m.category.empty()) add.emplace_back(kCategoryKey, std::string(m.category));
    if (const std::vector<absl::string_view> origins = mapper.originPathsOf(next);
        !origins.empty()) {
      std::string list;
      internal::JsonWriter(&list, 0, internal::JsonWriter::kCompact).Strings(origins);
      add.emplace_back(kOriginsKey, std::move(list));
    }
    if (options.doc_string_json) {
      // Module paths may come from non-UTF-8 node names: replaced, never thrown.
      std::string doc;
      internal::JsonWriter w(&doc, 0, internal::JsonWriter::kCompact);
      w.BeginObject();
      w.Key("semmap").BeginObject();
      w.Key("class").String(m.qualified_class);
      w.Key("confidence").Number(m.confidence);
      w.Key("module").String(m.module_path);
      w.Key("strategy").String(StrategyName(m.strategy));
      w.EndObject();
      w.EndObject();
      edit->doc_string = std::move(doc);
    }
    if (options.scoped_names && !plan.names[next].empty()) edit->name = plan.names[next];
    result.mapped += m.mapped() ? 1 : 0;
    return absl::OkStatus();
  };
  SEMMAP_ASSIGN_OR_RETURN(internal::ModelRewrite rewrite,
                          internal::ModelRewrite::Plan(file.bytes(), input, annotate_node,
                                                       options.max_subgraph_depth));
  if (rewrite.nodes() != graph.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        input, ": has ", rewrite.nodes(), " nodes but the mapped graph has ", graph.size(),
        "; was the file changed?"));
  }
  result.nodes = rewrite.nodes();
  result.external_tensors = rewrite.external_tensors();
  // The pieces are views into the mapping (WriteMappedPiecesAtomically).
  SEMMAP_RETURN_IF_ERROR(internal::WriteMappedPiecesAtomically(output, rewrite.pieces(), file, input));
  result.bytes_written = rewrite.size();
  return result;
}

std::string MovedExternalDataDirectory(const std::string& input, const std::string& output) {
  if (internal::ResolvedDirectoryOf(input) == internal::ResolvedDirectoryOf(output)) return "";
  return internal::DirectoryOf(output);
}

std::string AnnotateResultJson(const AnnotateResult& result, const AnnotateOptions& options,
                               const std::string& model, const std::string& output) {
  std::string text;
  internal::JsonWriter w(&text);
  w.BeginObject();
  w.Key("bytes").Integer(result.bytes_written);
  w.Key("external_tensors").Integer(result.external_tensors);
  w.Key("mapped").Integer(result.mapped);
  w.Key("model").String(model);
  w.Key("namespaces_kept").Integer(result.namespaces_kept);
  w.Key("namespaces_written").Integer(result.namespaces_written);
  w.Key("nodes").Integer(result.nodes);
  w.Key("output").String(output);
  if (options.scoped_names) {
    w.Key("renamed").Integer(result.renamed);
    w.Key("scoped_names_kept").Integer(result.scoped_kept);
  }
  w.EndObject();
  return text;
}

}  // namespace semmap
