#include "semmap/mapper.h"

#include <algorithm>
#include <optional>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "internal/evidence_store.h"
#include "internal/exporter_metadata.h"
#include "internal/file_io.h"
#include "internal/manifest_fit.h"
#include "internal/neighbourhood.h"
#include "internal/out_of_memory.h"
#include "internal/reference_transfer.h"
#include "internal/scope_resolver.h"
#include "internal/status_macros.h"
#include "internal/structure.h"
#include "internal/tensor_evidence.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace {

// Confidence of each outcome. Calibrated against the fixture corpus by
// semmap-eval; see docs/mapping.md.
constexpr double kExact = 1.0;
constexpr double kExactCallSuffix = 0.97;
constexpr double kExactAmbiguous = 0.6;
constexpr double kPrefix = 0.7;
constexpr double kClassMismatch = 0.7;
constexpr double kNoManifestFactor = 0.8;
constexpr std::size_t kMaxBindingCandidates = 256;
// Without a manifest every prefix of a scope's dotted path becomes a
// module, so a path of n atoms costs O(n x length): paths are cut (at an
// atom) to these bounds, which real module paths are far below, keeping the
// work on a hostile name linear in its length.
constexpr std::size_t kMaxDerivedAtoms = 64;
constexpr std::size_t kMaxDerivedPathBytes = 1024;

// A distinct module scope of the graph: the scope part of a TorchScript node
// name ("/bert/encoder/layer.0/attention/self"), or the deepest module path
// of a dynamo module stack split into atoms. Nodes sharing it share its
// resolution.
struct Scope {
  bool from_metadata = false;
  std::string text;  // owns the metadata path the segments point into
  ScopePath::Segments segments;
  std::string qualified_class;  // from metadata, when present
  std::size_t nodes = 0;
  internal::ScopeResolution resolution;
  Mapping outcome;  // what every node of this scope gets (unmapped if none)
};
using ScopeMap = absl::node_hash_map<std::string, Scope>;

absl::string_view ScopeKey(absl::string_view name) {
  return name.substr(0, name.rfind('/'));
}

// The manifest-free module path of a scope: the metadata path as written,
// or ScopePath::DottedPath() rules for names.
std::string DottedPath(const Scope& s) {
  if (s.from_metadata) return s.text;
  return DottedPathOf(s.segments);
}

// `path` cut after kMaxDerivedAtoms atoms or before passing
// kMaxDerivedPathBytes, at an atom boundary.
std::string BoundedPath(std::string path) {
  std::size_t atoms = 1, cut = std::string::npos;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '.') continue;
    if (i > kMaxDerivedPathBytes) break;
    cut = i;
    if (++atoms > kMaxDerivedAtoms) break;
  }
  if (atoms > kMaxDerivedAtoms || path.size() > kMaxDerivedPathBytes) {
    path.resize(cut == std::string::npos ? std::min(path.size(), kMaxDerivedPathBytes) : cut);
  }
  return path;
}

// Module paths implied by the scopes alone, for mapping without a manifest,
// with a "_N" call suffix folded into its base when the base also occurs
// ("relu_1" beside "relu").
std::vector<std::pair<std::string, std::string>> ScopeDerivedPaths(const ScopeMap& scopes) {
  absl::flat_hash_map<std::string, std::string> raw;  // path -> class
  for (const auto& entry : scopes) {
    std::string& cls = raw[BoundedPath(DottedPath(entry.second))];
    if (cls.empty()) cls = entry.second.qualified_class;
  }
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(raw.size());
  for (const auto& entry : raw) {
    std::string rewritten;
    for (absl::string_view atom : absl::StrSplit(entry.first, '.')) {
      absl::string_view base;
      long call = 0;
      const std::string prefix = rewritten.empty() ? "" : rewritten + ".";
      if (SplitCallSuffix(atom, &base, &call) && raw.contains(absl::StrCat(prefix, base))) {
        atom = base;
      }
      rewritten = absl::StrCat(prefix, atom);
    }
    out.emplace_back(std::move(rewritten), entry.second);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The scopes sorted by their segments: the candidates below (and their cap)
// do not depend on hash iteration order, and a PrefixResolver shares the
// steps of neighbours.
std::vector<Scope*> SortedScopes(ScopeMap* scopes) {
  // Each scope's segments joined by '\0', which sorts below every other
  // byte: comparing the joined texts orders as comparing segment by
  // segment, at one memcmp per comparison.
  std::string text;
  std::vector<std::pair<absl::string_view, Scope*>> keyed;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  spans.reserve(scopes->size());
  for (auto& entry : *scopes) {
    const std::size_t begin = text.size();
    for (std::size_t i = 0; i < entry.second.segments.size(); ++i) {
      if (i > 0) text.push_back('\0');
      text.append(entry.second.segments[i].data(), entry.second.segments[i].size());
    }
    spans.emplace_back(begin, text.size() - begin);
  }
  keyed.reserve(scopes->size());
  std::size_t k = 0;
  for (auto& entry : *scopes) {
    keyed.emplace_back(absl::string_view(text).substr(spans[k].first, spans[k].second),
                       &entry.second);
    ++k;
  }
  // Ties (equal segments) resolve alike whatever their order.
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Scope*> ordered;
  ordered.reserve(keyed.size());
  for (const auto& entry : keyed) ordered.push_back(entry.second);
  return ordered;
}

// Every plausible way to bind the ONNX root scope to the manifest.
std::vector<RootBinding> BindingCandidates(
    const Manifest& manifest, const std::vector<Scope*>& ordered,
    int max_wrapper_segments) {
  std::vector<RootBinding> out;
  out.emplace_back();  // ONNX root == manifest root
  absl::flat_hash_set<ModuleId> roots = {0};
  absl::flat_hash_set<std::string> wrappers;
  // Scopes sharing a first segment share its callers: each segment is
  // looked up once, so the lookups cost at most one visit per module (a
  // module has one variable name).
  absl::flat_hash_set<absl::string_view> looked_up;
  for (const Scope* scope : ordered) {
    const auto& segments = scope->segments;
    if (segments.empty()) continue;
    absl::string_view first = segments[0];
    // The module that calls a match of the first segment directly: the
    // match's path without the segment ("encoder.layer.0" - "layer.0").
    auto add_callers_of = [&](absl::string_view segment) {
      if (!looked_up.insert(segment).second) return;
      for (ModuleId c : manifest.withVariableName(segment)) {
        // Checked per candidate: one segment may name 10^5 modules.
        if (out.size() >= kMaxBindingCandidates) return;
        const std::string& path = manifest.module(c).path;
        if (path.size() == segment.size()) continue;  // the root's own child
        const ModuleId caller =
            manifest.find(absl::string_view(path).substr(0, path.size() - segment.size() - 1));
        if (caller != kNoModule && roots.insert(caller).second) {
          RootBinding b;
          b.root = caller;
          out.push_back(std::move(b));
        }
      }
    };
    add_callers_of(first);
    absl::string_view base;
    long call = 0;
    if (SplitCallSuffix(first, &base, &call)) add_callers_of(base);
    // Leading segments that name no module: a wrapper around the manifest.
    std::vector<std::string> wrapper;
    for (std::size_t i = 0; i < segments.size() &&
                            static_cast<int>(i) < max_wrapper_segments;
         ++i) {
      if (out.size() >= kMaxBindingCandidates) break;
      if (!manifest.withVariableName(segments[i]).empty()) break;
      wrapper.emplace_back(segments[i]);
      if (wrappers.insert(absl::StrJoin(wrapper, "/")).second) {
        RootBinding b;
        b.wrapper = wrapper;
        out.push_back(std::move(b));
      }
    }
    if (out.size() >= kMaxBindingCandidates) break;
  }
  return out;
}

RootBinding ChooseBinding(const Manifest& manifest, const std::vector<Scope*>& ordered,
                          int max_wrapper_segments) {
  const internal::ScopeResolver resolver(manifest);
  std::vector<RootBinding> candidates =
      BindingCandidates(manifest, ordered, max_wrapper_segments);
  RootBinding best;
  bool have_best = false;
  for (RootBinding& c : candidates) {
    internal::PrefixResolver prefix(resolver, c.root, c.wrapper);
    for (const Scope* scope : ordered) {
      const Scope& s = *scope;
      c.scoped_nodes += s.nodes;
      const auto r = prefix.Resolve(s.segments);
      if (r.complete()) c.resolved_nodes += s.nodes;
      c.indirect_steps += r.indirect * s.nodes;
    }
    const auto key = [&manifest](const RootBinding& b) {
      // More resolved nodes, then scopes that follow the module tree step by
      // step (an ancestor bound as root resolves through indirect searches),
      // then fewer wrapper segments, then a shallower root. The last two
      // make the choice independent of hash-map iteration order.
      return std::make_tuple(b.resolved_nodes, -static_cast<long>(b.indirect_steps),
                             -static_cast<long>(b.wrapper.size()),
                             -manifest.module(b.root).depth, -b.root);
    };
    if (!have_best || key(c) > key(best) ||
        (key(c) == key(best) && c.wrapper < best.wrapper)) {
      best = c;
      have_best = true;
    }
  }
  return best;
}

std::string ScopeEvidence(const Scope& s) {
  return s.from_metadata
             ? absl::StrCat("module stack ", internal::Abbreviate(s.text, 80))
             : absl::StrCat("scope /", internal::Abbreviate(absl::StrJoin(s.segments, "/"), 80));
}

// Registers the scope a node's name or metadata gives, or returns null.
// Names built from value names ("<value>_QuantizeLinear") describe the
// value's producer, not the node: they give no scope.
Scope* ScopeOf(const Node& node, const Rules& rules, ScopeMap* scopes) {
  if (!node.name.empty() && node.name.front() == '/' && !rules.isDerivedNodeName(node.name)) {
    const absl::string_view key = ScopeKey(node.name);
    auto it = scopes->find(key);
    if (it == scopes->end()) {
      it = scopes->try_emplace(std::string(key)).first;
      it->second.segments = ScopePath::Parse(node.name).segments();
    }
    ++it->second.nodes;
    return &it->second;
  }
  internal::ModuleStack stack;
  if (!internal::ReadModuleStack(node.metadata, &stack)) return nullptr;
  auto inserted = scopes->try_emplace(absl::StrCat("\x1e", stack.deepest()));
  Scope& s = inserted.first->second;
  if (inserted.second) {
    s.from_metadata = true;
    s.text = stack.deepest();
    s.qualified_class = stack.deepestClass();
    for (absl::string_view atom : absl::StrSplit(s.text, '.', absl::SkipEmpty())) {
      s.segments.push_back(atom);
    }
  }
  ++s.nodes;
  return &s;
}

}  // namespace

SemanticMapper::SemanticMapper(Graph graph) : graph_(std::move(graph)) {}
SemanticMapper::SemanticMapper(SemanticMapper&&) noexcept = default;
SemanticMapper& SemanticMapper::operator=(SemanticMapper&&) noexcept = default;
SemanticMapper::~SemanticMapper() = default;

absl::StatusOr<SemanticMapper> SemanticMapper::Create(const Graph& graph,
                                                      const Manifest* manifest,
                                                      const MapperOptions& options) try {
  return Create(graph, manifest == nullptr ? nullptr : std::make_shared<const Manifest>(*manifest),
                options);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory("the manifest", "copying");
}

absl::StatusOr<SemanticMapper> SemanticMapper::Open(const std::string& model_path,
                                                    const std::string& manifest_path,
                                                    const OpenOptions& options) {
  // The two files are read on two threads (each reader is single-threaded
  // and they share nothing); on one when no thread can be started.
  absl::StatusOr<Manifest> loaded = absl::NotFoundError("no manifest");
  auto read_manifest = [&]() {
    try {  // Manifest::Load reports its own errors; nothing may escape a thread
      loaded = Manifest::Load(manifest_path, options.manifest);
    } catch (const std::bad_alloc&) {
      loaded = internal::OutOfMemory(manifest_path, "loading the manifest");
    } catch (...) {
      loaded = absl::InternalError(
          absl::StrCat(manifest_path, ": unexpected exception while loading the manifest"));
    }
  };
  std::thread reader;
  if (!manifest_path.empty()) {
    try {
      reader = std::thread(read_manifest);
    } catch (const std::system_error&) {
      read_manifest();
    }
  }
  absl::StatusOr<Graph> graph = Graph::Load(model_path, options.graph);
  if (reader.joinable()) reader.join();
  if (!graph.ok()) return graph.status();
  std::shared_ptr<const Manifest> manifest;
  if (!manifest_path.empty()) {
    if (!loaded.ok()) return loaded.status();
    manifest = std::make_shared<const Manifest>(*std::move(loaded));
  }
  absl::StatusOr<SemanticMapper> mapper =
      Create(*std::move(graph), std::move(manifest), options.mapper);
  if (absl::IsFailedPrecondition(mapper.status()) && !manifest_path.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        model_path, ": manifest ", manifest_path, " is of another model: ",
        mapper.status().message()));
  }
  if (!mapper.ok()) {
    return absl::Status(mapper.status().code(),
                        absl::StrCat(model_path, ": ", mapper.status().message()));
  }
  return mapper;
}

absl::StatusOr<SemanticMapper> SemanticMapper::Create(Graph graph_handle,
                                                      std::shared_ptr<const Manifest> shared,
                                                      const MapperOptions& options) try {
  const Rules& rules = options.rules != nullptr ? *options.rules : Rules::Default();
  SemanticMapper mapper(std::move(graph_handle));
  mapper.evidence_ = std::make_unique<internal::EvidenceStore>();
  internal::EvidenceStore& store = *mapper.evidence_;
  const Graph& graph = mapper.graph_;
  const Manifest* manifest = shared.get();
  mapper.has_manifest_ = manifest != nullptr;
  mapper.mappings_.resize(graph.size());

  // Parse every name (or module stack) once; group nodes by scope.
  ScopeMap scopes;
  std::vector<const Scope*> node_scope(graph.size(), nullptr);
  for (std::size_t i = 0; i < graph.size(); ++i) {
    node_scope[i] = ScopeOf(graph.node(static_cast<NodeId>(i)), rules, &scopes);
  }

  // The unprocessed export, mapped first with the same manifest (or with
  // the module paths derived from its own scopes, then shared).
  std::optional<SemanticMapper> reference;
  if (options.reference != nullptr) {
    SEMMAP_RETURN_IF_ERROR(internal::CheckSameModel(graph, *options.reference, rules));
    MapperOptions reference_options = options;
    reference_options.reference = nullptr;
    SEMMAP_ASSIGN_OR_RETURN(reference, Create(*options.reference, shared, reference_options));
  }
  if (manifest == nullptr) {
    shared = reference ? reference->manifest_
                       : std::make_shared<const Manifest>(
                             Manifest::FromModulePaths(ScopeDerivedPaths(scopes)));
    manifest = shared.get();
  }
  mapper.manifest_ = std::move(shared);
  const bool derived = !mapper.has_manifest_;
  const std::vector<Scope*> ordered = SortedScopes(&scopes);
  mapper.binding_ = derived ? RootBinding{}
                            : ChooseBinding(*manifest, ordered, options.max_wrapper_segments);

  // Resolve each distinct scope once; its nodes copy the outcome.
  const internal::ScopeResolver resolver(*manifest);
  internal::PrefixResolver prefix(resolver, mapper.binding_.root, mapper.binding_.wrapper);
  const std::size_t wrapper_len = mapper.binding_.wrapper.size();
  for (Scope* scope : ordered) {
    Scope& s = *scope;
    s.resolution = prefix.Resolve(s.segments);
    const internal::ScopeResolution& r = s.resolution;
    if (derived) mapper.binding_.scoped_nodes += s.nodes;
    if (derived && r.complete()) mapper.binding_.resolved_nodes += s.nodes;
    Mapping& m = s.outcome;
    if (r.complete()) {
      m.module = r.module;
      m.strategy = s.from_metadata ? Strategy::kExporterMetadata : Strategy::kExactScope;
      m.confidence = r.ambiguous ? kExactAmbiguous : r.call_suffix ? kExactCallSuffix : kExact;
      std::string evidence = ScopeEvidence(s);
      if (r.call_suffix) absl::StrAppend(&evidence, " (call suffix folded)");
      const std::string& manifest_class = manifest->module(r.module).qualified_class;
      if (!derived && !s.qualified_class.empty() && s.qualified_class != manifest_class) {
        m.confidence = std::min(m.confidence, kClassMismatch);
        absl::StrAppend(&evidence, "; exporter says ", s.qualified_class);
      }
      m.evidence = store.Intern(evidence);
    } else if (r.module != kNoModule && r.resolved > wrapper_len) {
      m.module = r.module;
      m.strategy = Strategy::kScopePrefix;
      m.confidence = kPrefix;
      m.evidence = store.Intern(absl::StrCat(ScopeEvidence(s), ": resolved ",
                                             r.resolved - wrapper_len, " of ",
                                             r.total - wrapper_len, " segments"));
    } else {
      continue;
    }
    if (derived) m.confidence *= kNoManifestFactor;
  }
  for (std::size_t i = 0; i < graph.size(); ++i) {
    if (node_scope[i] != nullptr && node_scope[i]->outcome.mapped()) {
      mapper.mappings_[i] = node_scope[i]->outcome;
    }
  }

  // Nodes the reference export maps (MapperOptions::reference).
  if (reference) {
    internal::TransferFromReference(graph, *options.reference, reference->mapAll(), *manifest,
                                    rules, &mapper.mappings_, &store);
  }

  // Nodes with neither scope nor metadata: the names of their tensors.
  const internal::OpTraits ops(graph, rules);
  const internal::TensorEvidence tensors(graph, *manifest, rules, ops, mapper.binding_);
  if (!derived) {
    std::vector<internal::ScopeSample> samples;
    samples.reserve(scopes.size());
    for (const auto& [key, scope] : scopes) {
      samples.push_back({scope.from_metadata,
                         scope.from_metadata ? absl::string_view() : absl::string_view(key),
                         scope.text,
                         scope.segments, scope.qualified_class, scope.nodes});
    }
    mapper.fit_ = internal::AssessManifestFit(graph, samples, *manifest, rules, mapper.binding_,
                                              tensors);
    if (!mapper.fit_.fits && !options.allow_manifest_mismatch) {
      return absl::FailedPreconditionError(
          absl::StrCat("the manifest does not fit the graph: ", mapper.fit_.evidence));
    }
  }
  for (std::size_t i = 0; i < graph.size(); ++i) {
    Mapping& m = mapper.mappings_[i];
    if (m.strategy == Strategy::kExporterMetadata) tensors.WidenRewritten(static_cast<NodeId>(i), &m, &store);
    if (m.mapped() || ops.followsConsumers(static_cast<NodeId>(i))) continue;
    internal::TensorFinding finding;
    if (!tensors.ForNode(static_cast<NodeId>(i), &finding)) continue;
    m.module = finding.module;
    m.confidence = derived ? finding.confidence * kNoManifestFactor : finding.confidence;
    m.strategy = Strategy::kTensorNames;
    m.evidence = store.Intern(finding.evidence);
  }

  // Nodes still without evidence: the graph's structure and execution
  // order, then their neighbours.
  const std::vector<bool> shape = internal::ShapeComputations(graph, ops);
  internal::StructureCounts structure =
      internal::InferFromStructure(graph, *manifest, rules, ops, tensors, shape, &mapper.mappings_,
                                   &store);
  internal::InferFromNeighbourhood(graph, *manifest, ops, shape, structure.hints,
                                   options.max_neighbourhood_passes, &mapper.mappings_, &store);

  mapper.categories_.reserve(manifest->size());
  for (std::size_t i = 0; i < manifest->size(); ++i) {
    mapper.categories_.push_back(rules.categoryOf(*manifest, static_cast<ModuleId>(i)));
  }

  for (Mapping& m : mapper.mappings_) {
    if (!m.mapped()) {
      m.confidence = 0.0;
      m.strategy = Strategy::kUnmapped;
      if (m.evidence.empty()) m.evidence = "no scope and no mapped neighbour";  // a literal
      continue;
    }
    const ModuleInfo& info = manifest->module(m.module);
    m.module_path = info.path;
    m.class_name = info.class_name;
    m.qualified_class = info.qualified_class;
    m.category = mapper.categories_[m.module];
  }
  return mapper;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory("the model", "mapping");
} catch (const std::length_error&) {
  return internal::OutOfMemory("the model", "mapping");
}

absl::StatusOr<Mapping> SemanticMapper::moduleFor(absl::string_view node) const {
  const NodeId id = graph_.find(node);
  if (id == kNoNode) {
    return absl::NotFoundError(absl::StrCat(
        "no node named \"", internal::Abbreviate(std::string(node)), "\" in the graph"));
  }
  return mappings_[id];
}

std::array<std::size_t, kStrategyCount> SemanticMapper::strategyCounts() const {
  std::array<std::size_t, kStrategyCount> counts{};
  for (const Mapping& m : mappings_) ++counts[static_cast<std::size_t>(m.strategy)];
  return counts;
}

std::size_t SemanticMapper::mappedCount() const {
  return static_cast<std::size_t>(std::count_if(
      mappings_.begin(), mappings_.end(), [](const Mapping& m) { return m.confidence > 0; }));
}

}  // namespace semmap
