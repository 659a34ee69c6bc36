// semmap: map ONNX nodes exported from PyTorch / HuggingFace models back to
// the modules that produced them. Include this header for the whole API.
#ifndef SEMMAP_INCLUDE_SEMMAP_SEMMAP_H_
#define SEMMAP_INCLUDE_SEMMAP_SEMMAP_H_

#include "semmap/annotate.h"  // IWYU pragma: export
#include "semmap/diff.h"  // IWYU pragma: export
#include "semmap/embed.h"  // IWYU pragma: export
#include "semmap/extract.h"  // IWYU pragma: export
#include "semmap/graph.h"  // IWYU pragma: export
#include "semmap/graphml.h"  // IWYU pragma: export
#include "semmap/indexed_list.h"  // IWYU pragma: export
#include "semmap/manifest.h"  // IWYU pragma: export
#include "semmap/manifest_fit.h"  // IWYU pragma: export
#include "semmap/mapper.h"  // IWYU pragma: export
#include "semmap/mapping.h"  // IWYU pragma: export
#include "semmap/metadata_keys.h"  // IWYU pragma: export
#include "semmap/node_data.h"  // IWYU pragma: export
#include "semmap/profile.h"  // IWYU pragma: export
#include "semmap/query.h"  // IWYU pragma: export
#include "semmap/provenance.h"  // IWYU pragma: export
#include "semmap/reference_check.h"  // IWYU pragma: export
#include "semmap/report.h"  // IWYU pragma: export
#include "semmap/results_json.h"  // IWYU pragma: export
#include "semmap/root_binding.h"  // IWYU pragma: export
#include "semmap/rules.h"  // IWYU pragma: export
#include "semmap/scope_path.h"  // IWYU pragma: export
#include "semmap/sidecar.h"  // IWYU pragma: export
#include "semmap/stages.h"  // IWYU pragma: export
#include "semmap/strategy.h"  // IWYU pragma: export
#include "semmap/system_error.h"  // IWYU pragma: export
#include "semmap/tree.h"  // IWYU pragma: export
#include "semmap/truth.h"  // IWYU pragma: export
#include "semmap/version.h"  // IWYU pragma: export

#endif  // SEMMAP_INCLUDE_SEMMAP_SEMMAP_H_
