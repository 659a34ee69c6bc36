// semmap._core: the nanobind binding of libsemmap behind the `semmap`
// Python package (python/semmap/__init__.py holds the public wrappers).
// One file per class: the Model (model.h, model.cc) is bound in
// bind_model.cc, the Mapping in bind_mapping.cc; the module-level
// functions are here.
#include <nanobind/nanobind.h>

#include "absl/status/statusor.h"
#include "documents.h"
#include "errors.h"
#include "model.h"
#include "semmap/semmap.h"
#include "semmap/version.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace semmap_python {
namespace {

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
