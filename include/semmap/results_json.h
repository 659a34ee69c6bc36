// The JSON of semmap's results, written in one place for every client: the
// `semmap` tool's map --json, map --node --json, query --json, profile
// --json and semmap-eval --json, and the Python package (Model.manifest_fit)
// all come from these functions, so their fields cannot drift apart. (The
// counts a writing command prints are beside its result: AnnotateResultJson,
// ExtractResultJson, StagesResultJson, GraphmlResultJson, NodeDataResultJson,
// EmbedResultJson.) Objects are written as a JSON dump with a two-space
// indent writes them (keys in sorted order); bytes that are not
// UTF-8 (a name in another encoding) become U+FFFD. Lists that grow with
// the model are streamed to `out` as they are written.
//
// Thread-safety: each call only reads the mapper.
#ifndef SEMMAP_INCLUDE_SEMMAP_RESULTS_JSON_H_
#define SEMMAP_INCLUDE_SEMMAP_RESULTS_JSON_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "semmap/export.h"
#include "semmap/manifest.h"
#include "semmap/manifest_fit.h"
#include "semmap/mapper.h"
#include "semmap/profile.h"
#include "semmap/provenance.h"
#include "semmap/query.h"
#include "semmap/reference_check.h"
#include "semmap/truth.h"

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

// What chose the nodes of a list (`semmap query`'s selector), as the list's
// "query" member describes it.
struct SEMMAP_EXPORT NodeQuery {
  enum class Kind { kModule, kLayer, kClass, kCategory, kPattern, kBelow };
  Kind kind = Kind::kModule;
  // The module path (kModule), class (kClass), category (kCategory) or
  // pattern (kPattern) asked for.
  std::string text;
  bool subtree = false;        // kModule: with its descendants' nodes
  std::int64_t layer = 0;      // kLayer: the item index
  std::string container;       // kLayer: of this container only ("" = all)
  bool has_container = false;  // kLayer: `container` was given
  double confidence = 0;       // kBelow: the bound
};

// `semmap query --json` over nodes: {"count", "model", "nodes" (MappingJson
// of each, in the given order), "query"}; the query is {"kind": "module",
// "module", "subtree"}, {"kind": "layer", "layer", "container" (when
// given)}, {"kind": "class", "class"}, {"kind": "category", "category"},
// {"kind": "pattern", "pattern"} or {"kind": "below", "confidence"}.
SEMMAP_EXPORT void WriteNodeListJson(std::ostream& out, const SemanticMapper& mapper,
                                     const std::string& model_path, const NodeQuery& query,
                                     absl::Span<const NodeId> nodes);

// The 1.0-1.2 form: `query_json` is a JSON object describing the
// selection, written again with its keys in order (text that does not
// parse as JSON is written as a JSON string). Prefer the NodeQuery form.
SEMMAP_EXPORT void WriteNodeListJson(std::ostream& out, const SemanticMapper& mapper,
                                     const std::string& model_path,
                                     const std::string& query_json,
                                     absl::Span<const NodeId> nodes);

// `semmap query --empty-modules --json`: {"count", "model", "modules" (each
// {"class", "path", "qualified_class"}), "query": {"kind": "empty_modules"}}.
SEMMAP_EXPORT void WriteModuleListJson(std::ostream& out, const SemanticMapper& mapper,
                                       const std::string& model_path,
                                       absl::Span<const ModuleId> modules);

// `semmap query --containers --json`: {"containers" (each {"item_class",
// "item_qualified_class", "items" (their number), "layer", "outermost",
// "path"}), "model"}, with a final newline.
SEMMAP_EXPORT void WriteContainerListJson(std::ostream& out, const SemanticMapper& mapper,
                                          const std::string& model_path,
                                          absl::Span<const RepeatedContainer> containers);

// The files `semmap profile --json` names. A manifest or reference named
// on the command line is written as named, even empty; one not named is
// null.
struct SEMMAP_EXPORT ProfileSources {
  std::string model;
  std::optional<std::string> manifest;
  std::optional<std::string> reference;
  std::string profile;
};

// `semmap profile --json`: the profile and its attribution, with every
// module with time, every layer, class, category and op type:
// {"attributed_nodes", "attributed_us", "categories", "classes" and
// "op_types" (each {"calls", "name", "nodes", "us"}), "kernel_events",
// "kernel_us", "layers" (each {"calls", "container", "index", "module",
// "nodes", "us"}), "manifest" and "reference" (the named files or null),
// "model", "modules" (each module with time or calls: {"class", "module",
// "own_calls", "own_nodes", "own_us", "subtree_calls", "subtree_nodes",
// "subtree_us"}), "profile", "profiled_nodes",
// "providers", "run_us", "runs", "split_fused" ({"nodes", "us"}),
// "unattributed" (each {"calls", "examples", "nodes", "reason", "us"})},
// with a final newline. `attribution` is of `profile` over the mapper.
SEMMAP_EXPORT void WriteProfileJson(std::ostream& out, const SemanticMapper& mapper,
                                    const Profile& profile, const ProfileAttribution& attribution,
                                    const ProfileSources& sources);

// `semmap-eval --json`, on one line without a final newline: {"accuracy",
// "calibration" (each bucket {"correct", "count", "hi", "lo"}), "correct",
// "coverage", "known", "model" (`model_path`), "nodes", "origins"
// ({"exact", "fused", "listed", "spurious"}), "strategies" (per strategy
// with answers the truth knows: {"accuracy", "correct", "count"})}.
SEMMAP_EXPORT std::string TruthScoreJson(const TruthScore& score, const std::string& model_path);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_RESULTS_JSON_H_
