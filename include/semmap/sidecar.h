// Sidecar: every node's mapping and the module tree as one JSON file next
// to the model, for tools that should not link semmap (Python, viewers, CI).
//
//   semmap::SidecarOptions options;
//   options.model_path = "model.onnx";
//   options.manifest_path = "manifest.json";
//   absl::Status s = semmap::WriteSidecar(*mapper, "model.semmap.json", options);
//
// Format: {"format": "semmap.sidecar", "schema_version": 1, ...}; the schema
// is schema/sidecar.schema.json and docs/sidecar.md describes each field.
// Readers must check `format` and `schema_version`; fields may be added
// within a schema version, never removed or changed in meaning.
//
// Errors from WriteSidecar (messages start with the output path):
//   InvalidArgument   output is the model or manifest file (without
//                     allow_overwrite), or a directory
//   NotFound          output directory missing
//   PermissionDenied  output directory not writable
// The file is written atomically (temporary file, fsync, rename). Thread-safe:
// the mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_SIDECAR_H_
#define SEMMAP_INCLUDE_SEMMAP_SIDECAR_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "semmap/export.h"
#include "semmap/mapper.h"

namespace semmap {

// The schema version this build writes.
inline constexpr int kSidecarSchemaVersion = 1;

struct SEMMAP_EXPORT SidecarOptions {
  // Recorded in the file ("model.path", "manifest.path"); also the files
  // WriteSidecar refuses to overwrite. Empty: not recorded.
  std::string model_path;
  std::string manifest_path;
  // Every other file the command read (a reference, a profile, a rule
  // file): protected like the input.
  std::vector<std::string> protected_paths;
  // Allow the output to be any of these files.
  bool allow_overwrite = false;
  // Write the model-specific tree (TreeOptions::model_specific_only).
  bool model_specific_tree = false;
  // Pretty-print with this indent; -1 for one compact line.
  int indent = 1;
};

// The sidecar document as JSON text.
SEMMAP_EXPORT std::string SidecarJson(const SemanticMapper& mapper,
                                      const SidecarOptions& options = {});

// The sidecar's "tree" member alone: {"view", "unmapped_nodes", "modules"}.
SEMMAP_EXPORT std::string ModuleTreeJson(const SemanticMapper& mapper, bool model_specific,
                                         int indent = 1);

SEMMAP_EXPORT absl::Status WriteSidecar(const SemanticMapper& mapper, const std::string& output,
                                        const SidecarOptions& options = {});

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_SIDECAR_H_
