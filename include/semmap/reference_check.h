// ReferenceCheck: whether a reference export (MapperOptions::reference,
// `--reference`) can be the file the mapped graph was made from, beyond
// being the same model (SemanticMapper::referenceCheck(), mapper.h).
//
// A reference of another model is refused (InvalidArgument, shared
// initializers too few). A reference of the same model can still be no
// ancestor of the graph: the graph itself, the other exporter's export, or
// a processed copy that lost the names the graph still has. Its answers
// are then no better than the graph's own, and carrying them over would
// lower accuracy without a word. The mapper therefore:
//  - ignores a reference whose graph is the model's own (nothing carried
//    over; every answer is the model's own);
//  - states each finding as a warning (stderr in the tool's text mode, the
//    "reference_check" member of `semmap map --json`);
//  - and, whatever the reference, gives a node its own answer (what the
//    mapper answers without the reference) instead of a carried-over one
//    that is no more confident: from a reference that looks like the
//    model's source, only a confident own answer (kConfidentFloor) counts
//    (own_answers_kept). Nodes mapped by their own exact scope or exporter
//    metadata never take a carried-over answer.
#ifndef SEMMAP_INCLUDE_SEMMAP_REFERENCE_CHECK_H_
#define SEMMAP_INCLUDE_SEMMAP_REFERENCE_CHECK_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "semmap/export.h"

namespace semmap {

// How a file's nodes say which module they belong to.
enum class NodeNaming {
  kNone,      // neither (names stripped, or too few nodes to tell)
  kScopes,    // TorchScript scope names ("/bert/encoder/layer.0/.../MatMul")
  kMetadata,  // the dynamo exporter's names and module stacks ("node_linear_4")
};
// "none", "scopes", "metadata".
SEMMAP_EXPORT absl::string_view NodeNamingName(NodeNaming naming);

struct SEMMAP_EXPORT ReferenceCheck {
  bool checked = false;  // a reference was given
  // The reference's graph is the model's own (same nodes, names, op types,
  // inputs and outputs): it adds nothing and is not used.
  bool same_graph = false;
  // The two files name their nodes in the two exporters' ways, and share
  // almost no node names: the reference is the other exporter's export.
  bool other_exporter = false;
  // The reference's node names and metadata name fewer than half as many
  // module scopes as the model's: a processed copy (names stripped) of it,
  // not its source.
  bool less_informed = false;
  NodeNaming model_naming = NodeNaming::kNone;
  NodeNaming reference_naming = NodeNaming::kNone;
  // Distinct module scopes named by each file's node names (TorchScript)
  // or module metadata (dynamo). Tools add nodes, never scopes.
  std::size_t model_scopes = 0;
  std::size_t reference_scopes = 0;
  // Fewer than a quarter of the model's nodes pair with the reference's
  // (same name, same op on the same values, or writing its values): a
  // processed copy keeps most of its source's nodes or the values they
  // write, so the reference's graph is another one (the other exporter's).
  bool few_paired = false;
  // Nodes of the model named as a node of the reference (the last part of a
  // scoped name counts, as `annotate --scoped-names` keeps the old name).
  std::size_t shared_names = 0;
  // Nodes of the model paired with nodes of the reference.
  std::size_t paired_nodes = 0;
  // Nodes given their own answer instead of a carried-over one.
  std::size_t own_answers_kept = 0;
  // One sentence per finding above, for the user; empty when the reference
  // looks like the model's source.
  std::vector<std::string> warnings;

  // A reference that looks like the export the model was made from.
  bool ancestor() const { return checked && warnings.empty(); }
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_REFERENCE_CHECK_H_
