// ManifestFit: whether a manifest describes the model a graph was exported
// from (SemanticMapper::manifestFit(), mapper.h). The mapper refuses a
// misfit unless MapperOptions::allow_manifest_mismatch is set.
#ifndef SEMMAP_INCLUDE_SEMMAP_MANIFEST_FIT_H_
#define SEMMAP_INCLUDE_SEMMAP_MANIFEST_FIT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "semmap/export.h"

namespace semmap {

// Why a name the manifest does not have at its literal place still agrees
// with it (ManifestFit::notes). Each is a plain fact of PyTorch export, not
// of one architecture.
enum class FitNoteKind : std::uint8_t {
  // "/layer1/layer1.0/relu_1": TorchScript suffixes every later call of a
  // module called more than once in forward ("relu" called twice; one
  // layer shared across depth).
  kReusedCall = 0,
  // Items of a container with parameters and no node left after the last
  // one used: the exporter folded them into a neighbour (a BatchNorm into
  // the Conv before it).
  kFoldedByExporter = 1,
  // A parameter stored in another shape of the same size ([C] for the
  // module's [C, 1, 1]; a transposed weight).
  kStoredReshaped = 2,
  // A tensor named under a module that is none of its parameters or
  // buffers: a constant its forward created ("embed_tokens.embed_scale").
  kCreatedInForward = 3,
  // A scope reached past a module whose forward did not run (a wrapper's
  // forward calling "model.decoder" directly gives "/decoder"), or names
  // outside the module bound to the graph's root (a task head around a
  // base model's manifest).
  kOutsideManifestRoot = 4,
};
inline constexpr std::size_t kFitNoteKindCount = 5;
// "reused_call", "folded_by_exporter", "stored_reshaped",
// "created_in_forward", "outside_manifest_root".
SEMMAP_EXPORT absl::string_view FitNoteKindName(FitNoteKind kind);

struct SEMMAP_EXPORT FitNote {
  FitNoteKind kind = FitNoteKind::kReusedCall;
  std::size_t count = 0;  // scopes, container items or initializers
  std::size_t nodes = 0;  // nodes with those scopes (0 for tensors, items)
  std::string example;    // the first in text order, abbreviated
  // One line: "8 scopes are later calls of a module called more than once
  // (e.g. \"/layer1/layer1.0/relu_1\")".
  std::string text;
};

// Whether the manifest describes the model the graph was exported from,
// judged from the names the graph still has: node scopes and exporter
// module stacks (resolved under the root binding), and initializers named
// like parameters ("encoder.layer.0.output.dense.weight"). Three outcomes:
//  - fits: every name agrees;
//  - fits, with notes: some names differ from the manifest for a reason of
//    export (FitNoteKind), listed in `notes`; the mapping is done;
//  - misfit (`fits` false): the evidence says another model: most names
//    absent, classes that contradict across many scopes, parameters of
//    other sizes, or another depth of a repeated container. `evidence`
//    names the strongest evidence.
// A task model against its base model's manifest fits (the head's names are
// noted as outside the root). A graph without such names (stripped, or
// fully renamed by an optimizer) gives no evidence either way: it fits,
// with `checked` false. docs/mapping.md, "Manifest fit", gives the rules
// and how they were measured.
struct SEMMAP_EXPORT ManifestFit {
  std::size_t scoped_nodes = 0;      // nodes whose name or metadata gives a
                                     // scope below the root
  std::size_t resolved_nodes = 0;    // of those, naming a manifest module
                                     // (literally, or for a reason noted)
                                     // and its class, when the exporter
                                     // wrote classes
  std::size_t distinct_scopes = 0;   // the scopes of those nodes
  std::size_t resolved_scopes = 0;
  std::size_t class_conflicts = 0;   // scopes whose exporter class differs
  std::string first_class_conflict;
  std::size_t named_tensors = 0;     // initializers named like parameters
  std::size_t matched_tensors = 0;   // of those, agreeing with the manifest
  std::size_t shape_mismatches = 0;  // of those, contradicting it: another
                                     // element count, or a name a library
                                     // module does not have
  std::size_t unused_items = 0;      // trailing items of repeated containers
                                     // (of a class the graph uses there)
                                     // no evidence touches
  std::size_t unnamed_weights = 0;   // initializers of 2 or more dimensions
                                     // without a parameter's name, read by a
                                     // node whose scope names a library
                                     // module with parameters ("onnx::Conv_12"
                                     // after a BatchNorm was folded in)
  std::size_t weight_size_mismatches = 0;  // of those, of no size that
                                           // module's parameters have
  bool checked = false;  // enough names to judge (see docs/mapping.md)
  bool fits = true;
  // Why names differ from the manifest although it fits, one entry per
  // kind present, in FitNoteKind order. Empty for a misfit's own reasons.
  std::vector<FitNote> notes;
  // One line: the counts above, and for a misfit the strongest evidence.
  std::string evidence;

  // "fits", "fits, with notes", "misfit" or "not checked".
  absl::string_view verdict() const;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_MANIFEST_FIT_H_
