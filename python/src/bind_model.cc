// semmap._core.Model: loading, queries, the writers and the model's facts,
// each forwarding to the library (the long calls with the GIL released).
#include <optional>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "documents.h"
#include "errors.h"
#include "model.h"
#include "semmap/semmap.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace semmap_python {
namespace {

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

// `semmap report`; `numerics` empty: without --numerics.
void WriteModelReport(Model& m, const nb::bytes& output, bool allow_overwrite,
                      const nb::bytes& numerics) {
  semmap::ReportOptions options;
  options.model_path = m.modelPath();
  options.manifest_path = m.manifestPath();
  options.protected_paths = m.otherInputs();
  options.allow_overwrite = allow_overwrite;
  options.numerics_path = PathOf(numerics);
  absl::Status s;
  {
    nb::gil_scoped_release release;
    absl::StatusOr<semmap::ReportNumerics> read;
    if (!options.numerics_path.empty()) read = semmap::ReadReportNumerics(options.numerics_path);
    if (read.ok()) options.numerics = &*read;
    s = read.ok() || options.numerics_path.empty()
            ? semmap::WriteReport(m.mapper(), PathOf(output), options)
            : read.status();
  }
  ThrowIfError(s);
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

}  // namespace

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
      .def("write_report", &WriteModelReport, "output"_a, "allow_overwrite"_a, "numerics"_a)
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

}  // namespace semmap_python
