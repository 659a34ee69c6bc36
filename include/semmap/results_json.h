// The JSON of semmap's results, written in one place for every client: the
// `semmap` tool's map --json, map --node --json and query --json, and the
// Python package (Model.manifest_fit) all come from these functions, so
// their fields cannot drift apart. Objects are written as a JSON dump with a
// two-space indent writes them (keys in sorted order); bytes that are not
// UTF-8 (a name in another encoding) become U+FFFD. Lists that grow with
// the model are streamed to `out` as they are written.
//
// Thread-safety: each call only reads the mapper.
#ifndef SEMMAP_INCLUDE_SEMMAP_RESULTS_JSON_H_
#define SEMMAP_INCLUDE_SEMMAP_RESULTS_JSON_H_

#include <ostream>
#include <string>

#include "absl/types/span.h"
#include "semmap/export.h"
#include "semmap/manifest.h"
#include "semmap/manifest_fit.h"
#include "semmap/mapper.h"
#include "semmap/provenance.h"
#include "semmap/reference_check.h"

namespace semmap {

// The files a document names ("" for none).
struct SEMMAP_EXPORT JsonSources {
  std::string model;
  std::string manifest;
  std::string reference;
};

// One node's mapping: {"category", "class", "confidence", "domain",
// "evidence", "module" (null when unmapped), "name", "node", "op_type",
// "origins" (only for a node doing several modules' work:
// SemanticMapper::originsOf), "qualified_class", "strategy"}. `indent`: the object as written nested
// that many spaces deep in a larger document (0: a document of its own,
// without a final newline).
SEMMAP_EXPORT std::string MappingJson(const SemanticMapper& mapper, NodeId node,
                                      int indent = 0);

// ManifestFit as an object: "checked", "fits", "verdict", "evidence",
// "notes" (each {"reason", "count", "nodes", "example", "text"}) and every
// count of the struct. No final newline.
SEMMAP_EXPORT std::string ManifestFitJson(const ManifestFit& fit);

// ReferenceCheck as an object: "ancestor", "warnings" and every field of
// the struct (namings by NodeNamingName). No final newline.
SEMMAP_EXPORT std::string ReferenceCheckJson(const ReferenceCheck& check);

// Provenance as an object: "manifest", "reference" (InputSourceName),
// "record" (RecordUseName), with a record that was read "record_bytes",
// "record_generator", "record_fingerprint", and "note" when there is one.
// No final newline.
SEMMAP_EXPORT std::string ProvenanceJson(const Provenance& provenance);

// `semmap map --json`: {"confident", "confident_floor", "manifest" (the
// named file or null), "manifest_fit" (with a manifest, named or from the
// record), "mapped", "model", "modules" (per module holding nodes: class,
// nodes, path, subtree_nodes), "nodes", "provenance" (ProvenanceJson),
// "reference" (with a named reference), "reference_check"
// (ReferenceCheckJson; with a reference, named or the record's),
// "root_binding", "strategies"}.
SEMMAP_EXPORT void WriteSummaryJson(std::ostream& out, const SemanticMapper& mapper,
                                    const JsonSources& sources);

// `semmap query --json` over nodes: {"count", "model", "nodes" (MappingJson
// of each, in the given order), "query"}; `query_json` is the JSON object
// describing the selection, written as given (text that does not parse as
// JSON is written as a JSON string).
SEMMAP_EXPORT void WriteNodeListJson(std::ostream& out, const SemanticMapper& mapper,
                                     const std::string& model_path,
                                     const std::string& query_json,
                                     absl::Span<const NodeId> nodes);

// `semmap query --empty-modules --json`: {"count", "model", "modules" (each
// {"class", "path", "qualified_class"}), "query": {"kind": "empty_modules"}}.
SEMMAP_EXPORT void WriteModuleListJson(std::ostream& out, const SemanticMapper& mapper,
                                       const std::string& model_path,
                                       absl::Span<const ModuleId> modules);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_RESULTS_JSON_H_
