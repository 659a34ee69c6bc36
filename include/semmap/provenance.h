// Provenance: where a mapping's manifest and reference came from, and what
// became of the record an ONNX file may carry (SemanticMapper::provenance()).
//
// `semmap embed` (embed.h) stores in a model's metadata_props, under the
// key kRecordKey, a record of the export the file was made from: its
// manifest, a weightless copy of its graph and that graph's mapping
// (docs/record.md). Model-level metadata survives the deployment tools
// (onnxslim, ONNX Runtime's optimizers and quantizers, fp16 converters),
// node-level metadata and most names do not: a processed copy then maps
// as well as `--reference` to the export would, with no file but itself.
//
// SemanticMapper::Open uses a record by itself when no manifest and no
// reference file are named: its manifest as the manifest, its graph and
// answers as the reference. A named --manifest or --reference wins (the
// record's reference is still used with a named manifest identical to the
// record's). A record is checked before it is trusted: one made from another
// graph (copied into another model, or the graph edited since) is reported
// here and not used, and the file is mapped as it would be without it.
#ifndef SEMMAP_INCLUDE_SEMMAP_PROVENANCE_H_
#define SEMMAP_INCLUDE_SEMMAP_PROVENANCE_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "semmap/export.h"

namespace semmap {

// The model-level metadata_props key of the record, and the current
// version of its format (the value starts "semmap-record/<version>:").
inline constexpr char kRecordKey[] = "semmap.record";
inline constexpr int kRecordFormatVersion = 1;

// Where an input of the mapping came from.
enum class InputSource {
  kNone,    // not used
  kFile,    // a file the caller named (--manifest, --reference)
  kRecord,  // the record embedded in the model
};
// "none", "file", "record".
SEMMAP_EXPORT absl::string_view InputSourceName(InputSource source);

// What became of the model's embedded record.
enum class RecordUse {
  kAbsent,    // the model carries none
  kUsed,      // its manifest and its answers (the model is a processed copy)
  kSource,    // the model is the graph the record was made from: its
              // manifest is used, nothing needs carrying over
  kIgnored,   // not read: the caller named its own files, or asked so
  kRejected,  // read, but not made from this graph's source: nothing is
              // carried over. A record of another model (other weights, a
              // deeper model, a manifest that does not fit) is ignored
              // whole: the model maps exactly as without it. One of this
              // model whose graph does not pair (the other exporter's)
              // still gives its manifest where the manifest fits.
};
// "absent", "used", "source", "ignored", "rejected".
SEMMAP_EXPORT absl::string_view RecordUseName(RecordUse use);

struct SEMMAP_EXPORT Provenance {
  InputSource manifest = InputSource::kNone;
  InputSource reference = InputSource::kNone;
  RecordUse record = RecordUse::kAbsent;
  // Of a record that was read: its encoded size in the model, who wrote
  // it ("semmap 1.3.0") and the fingerprint of the graph it was made from
  // (16 hexadecimal digits).
  std::uint64_t record_bytes = 0;
  std::string record_generator;
  std::string record_fingerprint;
  // Why a record was ignored or rejected, one sentence; empty otherwise.
  std::string note;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_PROVENANCE_H_
