// semmap._core.Mapping (one node's answer) and its iterator.
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model.h"
#include "semmap/semmap.h"

namespace nb = nanobind;

namespace semmap_python {
namespace {

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

}  // namespace

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

}  // namespace semmap_python
