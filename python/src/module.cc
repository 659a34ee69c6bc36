// semmap._core: the nanobind binding of libsemmap behind the `semmap`
// Python package (python/semmap/__init__.py holds the public wrappers).
//
// A Model owns one SemanticMapper (which owns its graph and manifest), the
// rules it was mapped with, and caches of the Python strings it hands out:
// node ids per node, module path / class / category per module, op types
// and strategy names per distinct value. Mapping objects hold a reference
// to their Model, so nothing they point into goes away while they live.
// Every method runs with the GIL held except the long libsemmap calls
// (loading and mapping, writing files, diffing), which release it.
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "documents.h"
#include "errors.h"
#include "semmap/semmap.h"
#include "semmap/version.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace semmap_python {
namespace {

nb::str Str(absl::string_view s) { return nb::str(s.data(), s.size()); }

// Paths cross as bytes (semmap._core_path: os.fsencode, NUL refused), so
// that a file name that is not UTF-8 reaches the file system unchanged.
std::string PathOf(const nb::bytes& path) { return std::string(path.c_str(), path.size()); }
nb::bytes Bytes(const std::string& s) { return nb::bytes(s.data(), s.size()); }

// The Python strings of one module's Mapping fields.
struct ModuleStrings {
  nb::object path, class_name, qualified_class, category;
};

class Model {
 public:
  static std::unique_ptr<Model> Load(const nb::bytes& model_path, const nb::bytes& manifest_path,
                                     const nb::bytes& reference_path, const nb::bytes& rules_path,
                                     bool allow_manifest_mismatch, bool use_record) {
    auto model = std::make_unique<Model>();
    model->allow_manifest_mismatch_ = allow_manifest_mismatch;
    model->use_record_ = use_record;
    model->model_path_ = PathOf(model_path);
    model->manifest_path_ = PathOf(manifest_path);
    model->reference_path_ = PathOf(reference_path);
    model->rules_path_ = PathOf(rules_path);
    absl::Status status;
    {
      nb::gil_scoped_release release;
      status = model->Open();
    }
    ThrowIfError(status);
    model->modules_.resize(model->mapper().manifest().size() + 1);
    model->node_ids_.resize(model->mapper().graph().size());
    model->node_op_types_.resize(model->mapper().graph().size());
    return model;
  }

  const semmap::SemanticMapper& mapper() const { return *mapper_; }
  const semmap::Graph& graph() const { return mapper_->graph(); }
  std::size_t size() const { return mapper_->graph().size(); }
  const std::string& modelPath() const { return model_path_; }
  const std::string& manifestPath() const { return manifest_path_; }
  const std::string& referencePath() const { return reference_path_; }
  const std::string& rulesPath() const { return rules_path_; }
  // The files read besides the model and the manifest: no write replaces
  // them unless told to (the library's protected_paths).
  std::vector<std::string> otherInputs() const { return {reference_path_, rules_path_}; }
  const semmap::Rules* rules() const { return &mapper_->rules(); }

  // The node's id as a Python str (made once).
  const nb::object& NodeIdString(semmap::NodeId node) {
    nb::object& s = node_ids_[static_cast<std::size_t>(node)];
    if (!s.is_valid()) s = Str(graph().node(node).id);
    return s;
  }
  const ModuleStrings& ModuleStringsOf(semmap::NodeId node) {
    const semmap::Mapping& m = mapper_->moduleFor(node);
    ModuleStrings& s = modules_[static_cast<std::size_t>(m.module + 1)];
    if (!s.path.is_valid()) {
      s.path = m.mapped() ? nb::object(Str(m.module_path)) : nb::none();
      s.class_name = Str(m.class_name);
      s.qualified_class = Str(m.qualified_class);
      s.category = Str(m.category);
    }
    return s;
  }
  const nb::object& OpTypeString(semmap::NodeId node) {
    nb::object& cached = node_op_types_[static_cast<std::size_t>(node)];
    if (!cached.is_valid()) {
      const semmap::Node& n = graph().node(node);
      nb::object& s = op_types_[n.op_type];
      if (!s.is_valid()) s = Str(n.op_type);
      cached = s;
    }
    return cached;
  }
  const nb::object& StrategyString(semmap::Strategy strategy) {
    nb::object& s = strategies_[static_cast<std::size_t>(strategy)];
    // A member of semmap.Strategy (python/semmap/_strategy.py), a str subclass.
    if (!s.is_valid()) {
      s = nb::module_::import_("semmap._strategy").attr("Strategy")(Str(semmap::StrategyName(strategy)));
    }
    return s;
  }

  nb::list NodeList(const std::vector<semmap::NodeId>& nodes) {
    nb::list out;
    for (semmap::NodeId n : nodes) out.append(NodeIdString(n));
    return out;
  }

  // Built once, on the first query. Threads asking at the same moment wait
  // for the first to build it, the GIL released (so that none waits holding
  // it while the builder, which needs no Python, finishes).
  const semmap::SemanticQuery& query() {
    nb::gil_scoped_release release;
    std::call_once(query_once_,
                   [this] { query_ = std::make_unique<semmap::SemanticQuery>(*mapper_); });
    return *query_;
  }

  // Node index by id or unique name; KeyError naming it otherwise.
  semmap::NodeId FindNode(const std::string& name) const {
    const semmap::NodeId id = graph().find(name);
    if (id == semmap::kNoNode) {
      ThrowIfError(absl::NotFoundError(absl::StrCat(model_path_, ": no node \"",
                                                    absl::string_view(name).substr(0, 200),
                                                    name.size() > 200 ? "...\"" : "\"")),
                   NotFoundMeans::kKey);
    }
    return id;
  }

 private:
  absl::Status Open() {
    semmap::SemanticMapper::OpenOptions options;
    options.mapper.allow_manifest_mismatch = allow_manifest_mismatch_;
    options.use_record = use_record_;
    options.reference_path = reference_path_;
    options.rules_path = rules_path_;
    absl::StatusOr<semmap::SemanticMapper> mapper =
        semmap::SemanticMapper::Open(model_path_, manifest_path_, options);
    if (!mapper.ok()) return mapper.status();
    mapper_.emplace(*std::move(mapper));
    return absl::OkStatus();
  }

  std::string model_path_, manifest_path_, reference_path_, rules_path_;
  bool allow_manifest_mismatch_ = false;
  bool use_record_ = true;
  std::optional<semmap::SemanticMapper> mapper_;
  std::once_flag query_once_;
  std::unique_ptr<semmap::SemanticQuery> query_;  // built on the first query (query())
  std::vector<nb::object> node_ids_;
  std::vector<nb::object> node_op_types_;  // per node: a reference into op_types_
  std::vector<ModuleStrings> modules_;  // index module + 1; 0 = unmapped
  absl::flat_hash_map<absl::string_view, nb::object> op_types_;
  std::array<nb::object, semmap::kStrategyCount> strategies_;
};

// One node's answer; keeps its Model alive.
struct MappingRef {
  nb::object owner;
  Model* model;
  semmap::NodeId node;

  semmap::Mapping mapping() const { return model->mapper().moduleFor(node); }
};

struct MappingIterator {
  nb::object owner;
  Model* model;
  semmap::NodeId next = 0;
};

MappingRef MakeRef(nb::handle self, semmap::NodeId node) {
  return MappingRef{nb::borrow(self), nb::inst_ptr<Model>(self), node};
}

// The module paths of a fused node's origins (SemanticMapper::originsOf).
nb::list OriginsList(MappingRef& r) {
  nb::list out;
  for (absl::string_view path : r.model->mapper().originPathsOf(r.node)) out.append(Str(path));
  return out;
}

nb::dict MappingDict(MappingRef& r) {
  const semmap::Mapping& m = r.mapping();
  const ModuleStrings& s = r.model->ModuleStringsOf(r.node);
  nb::dict d;
  d["node"] = r.model->NodeIdString(r.node);
  d["op_type"] = r.model->OpTypeString(r.node);
  d["module"] = s.path;
  d["class_name"] = s.class_name;
  d["qualified_class"] = s.qualified_class;
  d["category"] = s.category;
  d["confidence"] = m.confidence;
  d["strategy"] = r.model->StrategyString(m.strategy);
  d["evidence"] = Str(m.evidence);
  d["origins"] = OriginsList(r);
  return d;
}

nb::dict StrategyCounts(Model& m) {
  nb::dict d;
  const auto counts = m.mapper().strategyCounts();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    d[m.StrategyString(static_cast<semmap::Strategy>(i))] = counts[i];
  }
  return d;
}

// Every mapping as columns (lists), for pandas.
nb::dict Columns(Model& m) {
  const std::size_t n = m.size();
  nb::list node, op_type, module, class_name, qualified, category, confidence, strategy,
      evidence;
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<semmap::NodeId>(i);
    const semmap::Mapping& mapping = m.mapper().moduleFor(id);
    const ModuleStrings& s = m.ModuleStringsOf(id);
    node.append(m.NodeIdString(id));
    op_type.append(m.OpTypeString(id));
    module.append(s.path);
    class_name.append(s.class_name);
    qualified.append(s.qualified_class);
    category.append(s.category);
    confidence.append(mapping.confidence);
    strategy.append(m.StrategyString(mapping.strategy));
    evidence.append(Str(mapping.evidence));
  }
  nb::dict d;
  d["node"] = node;
  d["op_type"] = op_type;
  d["module"] = module;
  d["class_name"] = class_name;
  d["qualified_class"] = qualified;
  d["category"] = category;
  d["confidence"] = confidence;
  d["strategy"] = strategy;
  d["evidence"] = evidence;
  return d;
}

// semmap embed: the record of `m` (the export, mapped with its manifest)
// written into a copy of `target` (m's own file when empty).
std::string EmbedModel(Model& m, const nb::bytes& target_path, const nb::bytes& output_path,
                       bool allow_overwrite) {
  const std::string output = PathOf(output_path);
  std::string target = PathOf(target_path);
  if (target.empty()) target = m.modelPath();
  semmap::EmbedOptions options;
  options.allow_overwrite = allow_overwrite;
  options.manifest_path = m.manifestPath();
  options.protected_paths = m.otherInputs();
  absl::StatusOr<semmap::EmbedResult> r;
  {
    nb::gil_scoped_release release;
    r = semmap::Embed(m.mapper(), m.modelPath(), target, output, options);
  }
  ThrowIfError(r.status());
  return semmap::EmbedResultJson(*r, target, output);
}

nb::dict AnnotateModel(Model& m, const nb::bytes& output_path, bool allow_overwrite,
                       bool write_namespace, bool overwrite_namespace, bool doc_string,
                       bool scoped_names, double min_confidence) {
  const std::string output = PathOf(output_path);
  semmap::AnnotateOptions options;
  options.allow_overwrite = allow_overwrite;
  options.manifest_path = m.manifestPath();
  options.protected_paths = m.otherInputs();
  options.write_namespace = write_namespace;
  options.overwrite_namespace = overwrite_namespace;
  options.doc_string_json = doc_string;
  options.scoped_names = scoped_names;
  options.scoped_name_min_confidence = min_confidence;
  options.rules = m.rules();
  absl::StatusOr<semmap::AnnotateResult> r;
  {
    nb::gil_scoped_release release;
    r = semmap::Annotate(m.mapper(), m.modelPath(), output, options);
  }
  ThrowIfError(r.status());
  nb::dict d;
  d["output"] = output_path;
  d["nodes"] = r->nodes;
  d["mapped"] = r->mapped;
  d["namespaces_written"] = r->namespaces_written;
  d["namespaces_kept"] = r->namespaces_kept;
  d["external_tensors"] = r->external_tensors;
  d["bytes"] = r->bytes_written;
  if (scoped_names) {
    d["renamed"] = r->renamed;
    d["scoped_names_kept"] = r->scoped_kept;
  }
  return d;
}

semmap::SidecarOptions SidecarOptionsOf(const Model& m, bool model_specific) {
  semmap::SidecarOptions options;
  options.model_path = m.modelPath();
  options.manifest_path = m.manifestPath();
  options.protected_paths = m.otherInputs();
  options.model_specific_tree = model_specific;
  options.indent = -1;
  return options;
}

// Mapping.strategy's docstring, its names from semmap/strategy.h's one
// list (the found ones in order, then 'unmapped'); the stub repeats it and
// ctest strategy_names compares the two.
const std::string& StrategyDoc() {
  static const std::string* doc = [] {
    std::string names;
    for (std::size_t i = 1; i < semmap::kStrategyCount; ++i) {
      absl::StrAppend(&names, i > 1 ? ", '" : "'",
                      semmap::StrategyName(static_cast<semmap::Strategy>(i)), "'");
    }
    return new std::string(absl::StrCat(
        "How the module was found: a semmap.Strategy, which equals its name as a string (", names,
        " or '", semmap::StrategyName(semmap::Strategy::kUnmapped), "')."));
  }();
  return *doc;
}

// The Python classes and functions, one group per function: Mapping and its
// iterator, Model, and the module-level functions.
// Long (about 90 lines): one property per field of Mapping, each with its
// docstring (and its Python type where the C++ one is a plain object, for
// the generated stub), in the order of the Python API.
void BindMapping(nb::module_& mod) {
  nb::class_<MappingRef>(mod, "Mapping",
                         "The answer for one ONNX node: its module, class, category, how "
                         "sure the mapper is (confidence in [0, 1]; 0 exactly when "
                         "unmapped) and why (strategy, evidence). Holds a reference to "
                         "its MappedModel.")
      .def_prop_ro(
          "node", [](MappingRef& r) { return r.model->NodeIdString(r.node); },
          nb::sig("def node(self) -> str"),
          "The node's id: its name when that is non-empty and unique, else "
          "'<name>#<index>' (what `semmap` prints and the sidecar's keys).")
      .def_prop_ro("index", [](MappingRef& r) { return r.node; },
                   "The node's position in the graph's traversal order.")
      .def_prop_ro(
          "name", [](MappingRef& r) { return Str(r.model->graph().node(r.node).name); },
          "The node's name in the file (may be empty or repeated).")
      .def_prop_ro(
          "op_type", [](MappingRef& r) { return r.model->OpTypeString(r.node); },
          nb::sig("def op_type(self) -> str"),
          "The ONNX op type ('MatMul').")
      .def_prop_ro(
          "domain", [](MappingRef& r) { return Str(r.model->graph().node(r.node).domain); },
          "The op's domain ('' for the default ONNX domain).")
      .def_prop_ro(
          "module", [](MappingRef& r) { return r.model->ModuleStringsOf(r.node).path; },
          nb::sig("def module(self) -> str | None"),
          "The dotted module path ('bert.encoder.layer.0.attention.self.query'); '' for "
          "the root, None for an unmapped node.")
      .def_prop_ro(
          "class_name", [](MappingRef& r) { return r.model->ModuleStringsOf(r.node).class_name; },
          nb::sig("def class_name(self) -> str"),
          "The module's class ('Linear'); '' when unmapped or without a manifest.")
      .def_prop_ro(
          "qualified_class",
          [](MappingRef& r) { return r.model->ModuleStringsOf(r.node).qualified_class; },
          nb::sig("def qualified_class(self) -> str"),
          "The module's qualified class ('torch.nn.modules.linear.Linear').")
      .def_prop_ro(
          "category", [](MappingRef& r) { return r.model->ModuleStringsOf(r.node).category; },
          nb::sig("def category(self) -> str"),
          "The module's semantic category ('attention', 'projection', ...; '' when no "
          "rule matches).")
      .def_prop_ro("confidence", [](MappingRef& r) { return r.mapping().confidence; },
                   "In [0, 1]; 0 exactly when unmapped.")
      .def_prop_ro(
          "strategy",
          [](MappingRef& r) { return r.model->StrategyString(r.mapping().strategy); },
          nb::sig("def strategy(self) -> semmap._strategy.Strategy"),
          StrategyDoc().c_str())
      .def_prop_ro("evidence", [](MappingRef& r) { return Str(r.mapping().evidence); },
                   "A short human-readable reason.")
      .def_prop_ro("origins", &OriginsList, nb::sig("def origins(self) -> list[str]"),
                   "For a node doing several modules' work (a Conv with its BatchNorm "
                   "folded in, an ONNX Runtime fusion), their module paths in manifest "
                   "order; [] otherwise. `module` stays the one primary answer.")
      .def_prop_ro("mapped", [](MappingRef& r) { return r.mapping().mapped(); },
                   "True when the node has a module.")
      .def_prop_ro("confident", [](MappingRef& r) { return r.mapping().confident(); },
                   "Mapped with confidence >= CONFIDENT_FLOOR (0.9).")
      .def("as_dict", &MappingDict, nb::sig("def as_dict(self) -> dict[str, typing.Any]"),
           "The fields as a dict: node, op_type, module, class_name, qualified_class, "
           "category, confidence, strategy, evidence, origins.")
      .def("__eq__",
           [](MappingRef& a, nb::handle other) {
             if (!nb::isinstance<MappingRef>(other)) return false;
             MappingRef& b = nb::cast<MappingRef&>(other);
             return MappingDict(a).equal(MappingDict(b));
           })
      .def("__hash__", [](MappingRef& r) { return nb::hash(r.model->NodeIdString(r.node)); })
      .def("__repr__", [](MappingRef& r) {
        const semmap::Mapping& m = r.mapping();
        const semmap::Node& n = r.model->graph().node(r.node);
        return absl::StrCat("<semmap.Mapping ", n.id, " (", n.op_type, ") -> ",
                            m.mapped() ? (m.module_path.empty() ? "<root>" : m.module_path)
                                       : "<unmapped>",
                            m.class_name.empty() ? "" : absl::StrCat(" (", m.class_name, ")"),
                            " ", semmap::StrategyName(m.strategy), " ",
                            m.confidence, ">");
      });

  nb::class_<MappingIterator>(mod, "MappingIterator")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); },
           nb::sig("def __iter__(self) -> MappingIterator"))
      .def("__next__", [](MappingIterator& it) {
        if (static_cast<std::size_t>(it.next) >= it.model->size()) throw nb::stop_iteration();
        return MappingRef{it.owner, it.model, it.next++};
      });

}

// Long (about 160 lines): the Model class is one nanobind class_ chain, a
// .def per method or property in the order of the Python API (docs/python.md),
// each a few lines that forward to the library, with the argument names and
// Python types nanobind's stubgen writes into _core.pyi.
void BindModel(nb::module_& mod) {
  nb::class_<Model>(mod, "Model", "A mapped ONNX model (see semmap.MappedModel).")
      .def_static("load", &Model::Load, "model"_a, "manifest"_a = "", "reference"_a = "",
                  "rules"_a = "", "allow_manifest_mismatch"_a = false, "use_record"_a = true,
                  "Loads and maps; '' means none. The GIL is released meanwhile.")
      .def("__len__", &Model::size)
      .def("__iter__",
           [](nb::handle self) {
             return MappingIterator{nb::borrow(self), nb::inst_ptr<Model>(self), 0};
           })
      .def("mapping",
           [](nb::handle self, long index) {
             Model& m = *nb::inst_ptr<Model>(self);
             const long n = static_cast<long>(m.size());
             if (index < 0) index += n;
             if (index < 0 || index >= n) throw nb::index_error("node index out of range");
             return MakeRef(self, static_cast<semmap::NodeId>(index));
           },
           "index"_a)
      .def("module_for",
           [](nb::handle self, const std::string& node) {
             return MakeRef(self, nb::inst_ptr<Model>(self)->FindNode(node));
           },
           "node"_a)
      .def("has_node",
           [](Model& m, const std::string& node) {
             return m.graph().find(node) != semmap::kNoNode;
           },
           "node"_a)
      .def("nodes_of_module",
           [](Model& m, const std::string& path, bool subtree) {
             auto r = m.query().nodesOfModule(path, subtree);
             ThrowIfError(r.status(), NotFoundMeans::kKey);
             return m.NodeList(*r);
           },
           "path"_a, "subtree"_a,
           nb::sig("def nodes_of_module(self, path: str, subtree: bool) -> list[str]"))
      .def("nodes_of_layer",
           [](Model& m, long index, const std::optional<std::string>& container) {
             auto r = container ? m.query().nodesOfLayer(*container, index)
                                : m.query().nodesOfLayer(index);
             ThrowIfError(r.status(), NotFoundMeans::kKey);
             return m.NodeList(*r);
           },
           "index"_a, "container"_a.none(),
           nb::sig("def nodes_of_layer(self, index: int, container: str | None) -> list[str]"))
      .def("nodes_of_class",
           [](Model& m, const std::string& cls) {
             auto r = m.query().nodesOfClass(cls);
             ThrowIfError(r.status(), NotFoundMeans::kKey);
             return m.NodeList(*r);
           },
           "cls"_a, nb::sig("def nodes_of_class(self, cls: str) -> list[str]"))
      .def("nodes_matching",
           [](Model& m, const std::string& pattern) {
             auto r = m.query().nodesMatching(pattern);
             ThrowIfError(r.status(), NotFoundMeans::kKey);
             return m.NodeList(*r);
           },
           "pattern"_a, nb::sig("def nodes_matching(self, pattern: str) -> list[str]"))
      .def("nodes_of_category",
           [](Model& m, const std::string& category) {
             return m.NodeList(m.query().nodesOfCategory(category));
           },
           "category"_a, nb::sig("def nodes_of_category(self, category: str) -> list[str]"))
      .def("nodes_below",
           [](Model& m, double threshold) {
             return m.NodeList(m.query().nodesBelowConfidence(threshold));
           },
           "threshold"_a, nb::sig("def nodes_below(self, threshold: float) -> list[str]"))
      .def("layer_containers",
           [](Model& m) {
             nb::list out;
             for (const semmap::RepeatedContainer* c : m.query().layerContainers()) {
               out.append(nb::make_tuple(Str(m.mapper().manifest().path(c->module)),
                                         c->items.size()));
             }
             return out;
           },
           nb::sig("def layer_containers(self) -> list[tuple[str, int]]"))
      .def(
          "tree",
          [](Model& m, bool model_specific) {
            std::optional<semmap::ModuleTree> tree;
            {
              nb::gil_scoped_release release;
              semmap::TreeOptions options;
              options.model_specific_only = model_specific;
              tree.emplace(semmap::ModuleTree::Build(m.mapper(), options));
            }
            return TreeDict(*tree, m.mapper().manifest());
          },
          "model_specific"_a,
          nb::sig("def tree(self, model_specific: bool) -> semmap.types.Tree"),
          "The module tree (`semmap tree --json`) as dicts and lists.")
      .def(
          "sidecar_json",
          [](Model& m, bool model_specific) {
            nb::gil_scoped_release release;
            return semmap::SidecarJson(m.mapper(), SidecarOptionsOf(m, model_specific));
          },
          "model_specific"_a,
          "The sidecar document as the JSON text `semmap sidecar --compact` writes "
          "(semmap.types.Sidecar once parsed).")
      .def("write_sidecar",
           [](Model& m, const nb::bytes& output, bool model_specific, bool allow_overwrite) {
             semmap::SidecarOptions options = SidecarOptionsOf(m, model_specific);
             options.allow_overwrite = allow_overwrite;
             options.indent = 1;
             absl::Status s;
             {
               nb::gil_scoped_release release;
               s = semmap::WriteSidecar(m.mapper(), PathOf(output), options);
             }
             ThrowIfError(s);
           },
           "output"_a, "model_specific"_a, "allow_overwrite"_a)
      .def("annotate", &AnnotateModel, "output"_a, "allow_overwrite"_a, "write_namespace"_a,
           "overwrite_namespace"_a, "doc_string"_a, "scoped_names"_a, "min_confidence"_a,
           nb::sig("def annotate(self, output: bytes, allow_overwrite: bool, "
                   "write_namespace: bool, overwrite_namespace: bool, doc_string: bool, "
                   "scoped_names: bool, min_confidence: float) -> dict[str, int | bytes]"))
      .def("embed", &EmbedModel, "target"_a, "output"_a, "allow_overwrite"_a,
           nb::sig("def embed(self, target: bytes, output: bytes, allow_overwrite: bool) -> str"),
           "Writes `target` (this model's file when empty) with this model's record; the "
           "result as JSON (`semmap embed --json`).")
      .def("write_report",
           [](Model& m, const nb::bytes& output, bool allow_overwrite) {
             semmap::ReportOptions options;
             options.model_path = m.modelPath();
             options.manifest_path = m.manifestPath();
             options.protected_paths = m.otherInputs();
             options.allow_overwrite = allow_overwrite;
             absl::Status s;
             {
               nb::gil_scoped_release release;
               s = semmap::WriteReport(m.mapper(), PathOf(output), options);
             }
             ThrowIfError(s);
           },
           "output"_a, "allow_overwrite"_a)
      .def("columns", &Columns, nb::sig("def columns(self) -> dict[str, list[typing.Any]]"))
      .def_prop_ro("model_path", [](Model& m) { return Bytes(m.modelPath()); })
      .def_prop_ro("manifest_path", [](Model& m) { return Bytes(m.manifestPath()); })
      .def_prop_ro("reference_path", [](Model& m) { return Bytes(m.referencePath()); })
      .def_prop_ro("rules_path", [](Model& m) { return Bytes(m.rulesPath()); })
      .def_prop_ro("has_manifest", [](Model& m) { return m.mapper().hasManifest(); })
      .def_prop_ro("model_class", [](Model& m) { return m.mapper().manifest().modelClass(); })
      .def_prop_ro("module_count", [](Model& m) { return m.mapper().manifest().size(); })
      .def_prop_ro("mapped_count", [](Model& m) { return m.mapper().mappedCount(); })
      .def_prop_ro("strategy_counts", &StrategyCounts,
                   nb::sig("def strategy_counts(self) -> dict[semmap._strategy.Strategy, int]"))
      .def_prop_ro("manifest_fit_json",
                   [](Model& m) { return semmap::ManifestFitJson(m.mapper().manifestFit()); })
      .def_prop_ro("provenance_json",
                   [](Model& m) { return semmap::ProvenanceJson(m.mapper().provenance()); })
      .def_prop_ro("graph_kind",
                   [](Model& m) { return Str(semmap::GraphKindName(m.mapper().graphKind())); })
      .def_prop_ro("reference_check_json",
                   [](Model& m) {
                     return semmap::ReferenceCheckJson(m.mapper().referenceCheck());
                   })
      .def_prop_ro("producer",
                   [](Model& m) {
                     return nb::make_tuple(Str(m.graph().producerName()),
                                           Str(m.graph().producerVersion()));
                   },
                   nb::sig("def producer(self) -> tuple[str, str]"))
      .def_prop_ro("opset", [](Model& m) { return m.graph().opset(); });

}

void BindFunctions(nb::module_& mod) {
  mod.def(
      "diff",
      [](Model& a, Model& b, bool all_modules, double min_module_overlap,
         bool require_same_model_class) {
        semmap::DiffOptions options;
        options.min_module_overlap = min_module_overlap;
        options.require_same_model_class = require_same_model_class;
        absl::StatusOr<semmap::ModelDiff> d;
        {
          nb::gil_scoped_release release;
          d = semmap::DiffModels(a.mapper(), b.mapper(), options);
        }
        ThrowIfError(d.status());
        return DiffDict(*d, all_modules);
      },
      "a"_a, "b"_a, "all_modules"_a, "min_module_overlap"_a, "require_same_model_class"_a,
      nb::sig("def diff(a: Model, b: Model, all_modules: bool, min_module_overlap: float, "
              "require_same_model_class: bool) -> semmap.types.Diff"),
      "The diff of two models (`semmap diff --json`) as dicts and lists; ValueError "
      "when they look unrelated.");
}

}  // namespace
}  // namespace semmap_python

using namespace semmap_python;  // NOLINT: the module body below only

NB_MODULE(_core, mod) {
  mod.doc() = "libsemmap for Python: the compiled core behind the semmap package.";
  mod.attr("__version__") = SEMMAP_VERSION_STRING;
  mod.attr("CONFIDENT_FLOOR") = semmap::kConfidentFloor;

  BindMapping(mod);
  BindModel(mod);
  BindFunctions(mod);
}
