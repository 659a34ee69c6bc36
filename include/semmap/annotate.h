// Annotate: write a copy of an ONNX model whose nodes say which module
// produced them, for viewers (Netron, Model Explorer) and downstream tools.
//
//   semmap::AnnotateOptions options;
//   absl::StatusOr<semmap::AnnotateResult> r =
//       semmap::Annotate(*mapper, "model.onnx", "model.semmap.onnx", options);
//
// Each node gets these metadata_props entries (NodeProto field 9, onnx >= 1.16;
// the key constants are below):
//   module@semmap      module path ("" when unmapped)
//   class@semmap       qualified class ("" when unknown)
//   confidence@semmap  in [0, 1], shortest decimal form
//   strategy@semmap    StrategyName()
//   category@semmap    Mapping::category (only when not empty)
//   namespace          (mapped nodes) one "/"-separated element per module
//                      level from the root to the node's module, so viewers
//                      that group by namespace (Model Explorer) show the
//                      module hierarchy with each module at one place:
//                        ": BertForSequenceClassification/bert: BertModel/
//                         encoder: BertEncoder/layer.0: BertLayer/..."
//                      (path atoms relative to the level above, short
//                      class; no level for containers that are never
//                      called, Rules::isUncalledModule). Without a manifest
//                      the atoms alone, without a root level: the
//                      TorchScript scope. In a file whose nodes carry the
//                      dynamo exporter's namespace, semmap's entries copy
//                      its spelling ("<full path>: <qualified class>" and
//                      its levels) instead, so both kinds of entry build one
//                      tree.
// Entries of those five keys already present are replaced, and so are the
// "semmap.module"-style keys (prefix "semmap.") earlier versions wrote, so
// annotating twice gives the same file. A `namespace` the exporter wrote
// (naming modules of the manifest with their classes; it knows the true
// call stack and adds the operator as a last level) is kept unless
// AnnotateOptions::overwrite_namespace is set; one naming nothing of the
// manifest (the exporter's empty-stack marker) is replaced. Everything else
// in the file is preserved byte for byte: the model is not parsed with
// protobuf but edited at the wire level (each node's edited fields spliced
// into the file's own bytes, tensor payloads copied verbatim, only the
// length prefixes of the messages around an edited node re-encoded), so
// files above 2 GB are annotated and the result does not depend on the onnx
// version semmap was built with. New entries follow the node's existing
// fields; the output parses to the same ModelProto as protobuf's
// serialization of the same edits. External data references are
// written unchanged (relative to the output's directory: move the data
// files along when writing elsewhere; see AnnotateResult::external_tensors).
//
// Durable form (AnnotateOptions::scoped_names, off by default). Optimizers
// run before deployment (onnxslim, ONNX Runtime's transformer optimizer and
// session optimization) drop every node's metadata_props but keep the names
// of the nodes they do not fuse. With scoped_names, each node mapped with
// confidence >= scoped_name_min_confidence (never below kConfidentFloor) is
// renamed to a scope in the TorchScript exporter's convention, the old name
// kept whole as the last part ('%' and '/' in it written "%25" and "%2F"):
//   node_linear_4  ->  /bert/encoder/layer.0/attention/self/query/node_linear_4
//   /x/y/Relu      ->  /bert/pooler/%2Fx%2Fy%2FRelu
// One segment per module scope (a ModuleList child is one segment,
// "layer.0"), under the mapper's root binding (its wrapper segments first).
// A new name is written only when it parses back (ScopePath) and resolves
// (as the mapper resolves names) to exactly the node's module, and when
// joining its segments with '.' gives the module path, so `semmap map` on
// the file, with or without the manifest and after such tools, answers with
// that module by `exact_scope`, with confidence 1: which is why the floor
// is never below kConfidentFloor (a guess must not come back as a
// certainty). Left alone: nodes below the floor or unmapped; nodes whose name already is a scope resolving to their module;
// nodes in model-local function bodies; modules outside the root binding or
// whose path cannot be written as such a scope. New names are unique among
// all node names of the model, old and new ("_1", "_2" appended to the last
// part when needed, as torch does). Graph inputs, outputs, value and
// initializer names never change. To annotate a renamed file again, map it
// afresh: its renamed nodes are then already scoped and keep their names.
// See docs/annotate.md.
//
// The model at `input` must be the one the mapper's Graph was loaded from;
// nodes are matched by Graph traversal order (see graph.h) and a mismatch in
// count, name or op type is FailedPrecondition.
//
// Output is written atomically (temporary file in the output's directory,
// fsync, rename). Errors (messages start with the file at fault):
//   InvalidArgument   output is the input file and allow_overwrite is false;
//                     output is a directory; input not an ONNX model;
//                     scoped_names with a floor below kConfidentFloor (the
//                     message names the option, not a file)
//   NotFound          input missing; output directory missing
//   PermissionDenied  output directory not writable
//   FailedPrecondition input is not the model the mapper was built on
//   DataLoss           the input shrank while it was read
// On error nothing is written and the input is untouched. Thread-safe: the
// mapper is only read.
#ifndef SEMMAP_INCLUDE_SEMMAP_ANNOTATE_H_
#define SEMMAP_INCLUDE_SEMMAP_ANNOTATE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "semmap/export.h"
#include "semmap/mapper.h"
#include "semmap/metadata_keys.h"
#include "semmap/rules.h"

namespace semmap {

// Annotate writes the node keys of semmap/metadata_keys.h (kModuleKey,
// kClassKey, kConfidenceKey, kStrategyKey, kCategoryKey).
struct SEMMAP_EXPORT AnnotateOptions {
  // Allow `output` to be the input file itself (annotate in place) or the
  // manifest.
  bool allow_overwrite = false;
  // The manifest the mapper read, if any: protected like the input model.
  std::string manifest_path;
  // Every other file the command read (a reference, a profile, a rule
  // file): protected like the input.
  std::vector<std::string> protected_paths;
  // Write the `namespace` entry at all.
  bool write_namespace = true;
  // Replace a `namespace` entry the node already has.
  bool overwrite_namespace = false;
  // Also set each node's doc_string to the JSON form
  // {"semmap":{"module":...,"class":...,"confidence":...,"strategy":...}},
  // replacing any doc_string it had.
  bool doc_string_json = false;
  // Rename confidently mapped nodes to scoped names (see above). Off by
  // default: renaming surprises users and tools that refer to nodes by name.
  bool scoped_names = false;
  // Nodes mapped with less confidence keep their names. The default,
  // kConfidentFloor (0.9), admits exact scope and exporter-metadata answers
  // and the two strongest inferences, never op-rule or neighbourhood
  // guesses. It may be raised, not lowered: a renamed node reads back as
  // an exact scope at confidence 1, so Annotate refuses a floor below
  // kConfidentFloor (InvalidArgument) and PlanScopedNames never renames
  // below it. Without a manifest every confidence is at most 0.8
  // (docs/mapping.md): nothing is renamed, annotate with the manifest.
  double scoped_name_min_confidence = kConfidentFloor;
  // The rules the mapper used, to avoid names it would not read as scopes
  // (Rules::isDerivedNodeName); null means Rules::Default().
  const Rules* rules = nullptr;
  // Inputs above this size are refused (InvalidArgument). The file is
  // edited at the wire level over a memory map, so protobuf's 2 GB message
  // limit does not apply; the default is GraphOptions'.
  std::uint64_t max_file_bytes = std::uint64_t{1} << 40;
  int max_subgraph_depth = 64;
};

struct SEMMAP_EXPORT AnnotateResult {
  std::size_t nodes = 0;             // nodes annotated (every node)
  std::size_t mapped = 0;            // of those, with a module
  std::size_t namespaces_written = 0;
  std::size_t namespaces_kept = 0;   // existing namespace entries left alone
  std::size_t external_tensors = 0;  // initializers with external data
  std::uint64_t bytes_written = 0;
  std::size_t renamed = 0;           // scoped_names: nodes given a scoped name
  std::size_t scoped_kept = 0;       // scoped_names: names already resolving to the module
};

// The renaming scoped_names performs, without writing anything.
struct SEMMAP_EXPORT ScopedNamePlan {
  std::vector<std::string> names;  // per NodeId: the new name, "" = unchanged
  std::size_t renamed = 0;         // non-empty entries of `names`
  std::size_t kept = 0;            // confident nodes whose name already resolves
  std::size_t below_floor = 0;     // mapped below the floor (or below
                                   // kConfidentFloor), or unmapped
  std::size_t not_expressible = 0;  // confident, but no scope resolves back
                                    // (function body, outside the binding,
                                    // module path that does not round-trip)
};

// Plans scoped names for every node of the mapper's graph with
// options.scoped_name_min_confidence and options.rules (other options are
// ignored). Deterministic: depends only on the graph, the mapping and the
// options.
SEMMAP_EXPORT ScopedNamePlan PlanScopedNames(const SemanticMapper& mapper,
                                             const AnnotateOptions& options);

SEMMAP_EXPORT absl::StatusOr<AnnotateResult> Annotate(const SemanticMapper& mapper,
                                                      const std::string& input,
                                                      const std::string& output,
                                                      const AnnotateOptions& options = {});

// The `namespace` entries Annotate writes, without writing anything.
struct SEMMAP_EXPORT NamespacePlan {
  // Per NodeId: the entry to write (replacing any the node has); "" = none
  // written (the node keeps the exporter's, or is unmapped).
  std::vector<std::string> values;
  std::size_t written = 0;  // non-empty entries of `values`
  std::size_t kept = 0;     // exporter namespaces left in place
  // True when the file has exporter namespaces naming manifest modules:
  // `values` then spell every level exactly as the exporter does.
  bool exporter_spelling = false;
};

// Plans the namespace entries for every node of the mapper's graph with
// options.write_namespace, overwrite_namespace and rules (other options are
// ignored). Linear in the graph plus the distinct modules' namespaces.
SEMMAP_EXPORT NamespacePlan PlanNamespaces(const SemanticMapper& mapper,
                                           const AnnotateOptions& options);

// Where a copy written to `output` reads its external data from when that is
// not where `input` reads it: `output`'s directory as written ("." for a
// bare file name, "/" at the root) when the two files' directories differ
// once resolved (".", "..", symbolic links), "" when they are one. Annotate
// writes external data references unchanged, relative to the output's
// directory, so a copy written elsewhere needs the data files copied there
// (AnnotateResult::external_tensors). Reads the file system, never fails.
SEMMAP_EXPORT std::string MovedExternalDataDirectory(const std::string& input,
                                                     const std::string& output);

// `semmap annotate --json`: {"bytes", "external_tensors", "mapped", "model",
// "namespaces_kept", "namespaces_written", "nodes", "output", and with
// options.scoped_names "renamed", "scoped_names_kept"}, without a final
// newline.
SEMMAP_EXPORT std::string AnnotateResultJson(const AnnotateResult& result,
                                             const AnnotateOptions& options,
                                             const std::string& model, const std::string& output);

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_ANNOTATE_H_
