// The module tree and the diff as Python objects, built from the library's
// structures (semmap::ModuleTree, semmap::ModelDiff) without a JSON text in
// between. Keys, values and key order are those of `semmap tree --json` and
// `semmap diff --json` (src/output/sidecar.cc, src/analysis/diff.cc): the
// JSON writer's objects keep their keys sorted, so these dicts do too, and
// strings from the files are decoded with invalid UTF-8 replaced by U+FFFD
// as the writer does. python/semmap/types.py types them (Tree, Diff).
// Must be called with the GIL held.
#ifndef SEMMAP_PYTHON_SRC_DOCUMENTS_H_
#define SEMMAP_PYTHON_SRC_DOCUMENTS_H_

#include <nanobind/nanobind.h>

#include "semmap/semmap.h"

namespace semmap_python {

// {"modules", "unmapped_nodes", "view"[, "subtree_op_types_complete"]}.
nanobind::dict TreeDict(const semmap::ModuleTree& tree, const semmap::Manifest& manifest);

// The "semmap.diff" document; every module with nodes with all_modules,
// else the changed ones.
nanobind::dict DiffDict(const semmap::ModelDiff& diff, bool all_modules);

}  // namespace semmap_python

#endif  // SEMMAP_PYTHON_SRC_DOCUMENTS_H_
