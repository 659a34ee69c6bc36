// The provenance record's format (docs/record.md): reading it from a
// model's metadata, and the pieces its writer (output/embed.cc) shares.
//
// The value of the model-level metadata entry kRecordKey is
//   "semmap-record/1:" + <bytes of zlib(R), decimal> + ":" + base64(zlib(R))
// where R is a serialized ONNX ModelProto: the weightless copy of the
// source export's graph (graph/weightless_copy.h) whose own model-level
// metadata_props, written before its graph, hold
//   "semmap.source"   JSON {"fingerprint": 16 hex digits, "nodes": N,
//                     "generator": "semmap X.Y.Z", "naming": "scopes" |
//                     "metadata" | "none", "scopes": S} (how the export
//                     named its modules: the copy keeps no node metadata)
//   "semmap.manifest" the manifest's JSON text
//   "semmap.answers"  JSON {"strategies": [names], "module": [per node: a
//                     manifest module index or -1], "confidence": [per
//                     node], "strategy": [per node: an index into
//                     "strategies"], "origins": [[node, [modules...]]...]}
// (schema/record-answers.schema.json). Module indexes are the manifest's
// module order, nodes the copy's traversal order (graph.h), which is the
// source's.
#ifndef SEMMAP_SRC_MAPPING_STEPS_READ_RECORD_H_
#define SEMMAP_SRC_MAPPING_STEPS_READ_RECORD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/origin_table.h"
#include "mapping/steps/check_reference.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/provenance.h"

namespace semmap {
namespace internal {

inline constexpr absl::string_view kRecordValuePrefix = "semmap-record/";
inline constexpr absl::string_view kRecordSourceKey = "semmap.source";
inline constexpr absl::string_view kRecordManifestKey = "semmap.manifest";
inline constexpr absl::string_view kRecordAnswersKey = "semmap.answers";

// The record's second copy: a line of the main graph's doc_string,
// "semmap.record=" + the value. Tools that rebuild the ModelProto drop its
// metadata_props and keep the graph's doc_string (onnx-graphsurgeon,
// Polygraphy: docs/record.md); embed writes both, and the metadata entry
// wins where both are there.
inline constexpr absl::string_view kRecordDocLinePrefix = "semmap.record=";
// `doc` without its record lines, and with a line holding `value` appended
// (when `value` is not empty); the rest of `doc` unchanged.
std::string WithRecordDocLine(absl::string_view doc, absl::string_view value);
// The value of the last record line of `doc`, or an empty view.
absl::string_view RecordDocLine(absl::string_view doc);
// Whether `graph` carries a record: the metadata entry or the doc line.
bool CarriesRecord(const Graph& graph);

// Bounds on what a record may make the reader allocate.
struct RecordLimits {
  // A longer metadata value is refused.
  std::uint64_t max_encoded_bytes = std::uint64_t{1} << 30;
  // The inflated copy may be at most this large, and at most
  // kMaxInflationRatio times its compressed size (a small value that
  // inflates without end is refused before it is allocated).
  std::uint64_t max_inflated_bytes = std::uint64_t{2} << 30;
};
inline constexpr std::uint64_t kMaxInflationRatio = 256;

struct DecodedRecord {
  // The weightless copy of the source export, whose fingerprint is the one
  // the record states (always set once read).
  std::optional<Graph> source;
  std::shared_ptr<const Manifest> manifest;
  // As stored, for writing the record again: a view into `source`'s
  // metadata, valid as long as it (a copy of its 48 MB at 1M nodes would
  // be alive for the whole mapping).
  absl::string_view manifest_text;
  std::vector<MappingRecord> answers;  // per node of `source`
  OriginTable origins;                 // of `source`'s nodes
  std::uint64_t fingerprint = 0;
  std::string generator;
  GraphNaming naming;  // of the export itself
  std::uint64_t encoded_bytes = 0;
};

// The record `graph` carries, or nullopt when it has none (the last entry
// counts when the key repeats). Read whole whatever graph carries it (the
// export it was made from as well as its copies), so that a record gets
// one verdict everywhere. The header is read exactly as documented: no
// sign, space or leading zero in the version and the length, base64 padded
// and on one line. Errors (messages start with `origin` and the key):
//   FailedPrecondition  a format version newer than this build reads
//   InvalidArgument     a value that is not a record (prefix, length,
//                       base64, zlib, the copy, the manifest, the answers,
//                       each naming the part and the JSON pointer), above a
//                       limit, or inconsistent (one of the copy's three
//                       entries missing or repeated, its fingerprint or
//                       node count not the one the record states)
//   DataLoss            a truncated zlib stream or value
absl::StatusOr<std::optional<DecodedRecord>> ReadRecord(const Graph& graph,
                                                        absl::string_view origin,
                                                        const GraphOptions& graph_options,
                                                        const RecordLimits& limits = {});

// A reference whose mapping is already known (a record's graph and
// answers), instead of MapperOptions::reference mapped afresh.
struct GivenReference {
  const Graph* graph = nullptr;
  const std::vector<MappingRecord>* answers = nullptr;  // per node of `graph`
  const OriginTable* origins = nullptr;
  const GraphNaming* naming = nullptr;  // the export's, measured when it was recorded
  // The reference check already made against `graph`, or null.
  const ReferenceCheck* check = nullptr;
};

// Whether `a` and `b` list the same modules (paths and classes) in the same
// order, so that module indexes of one are those of the other.
bool SameModules(const Manifest& a, const Manifest& b);

// 16 lower-case hexadecimal digits.
std::string FingerprintText(std::uint64_t fingerprint);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_READ_RECORD_H_
