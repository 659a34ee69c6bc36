// The first step of mapping: the graph's nodes grouped by the module scope
// their name or exporter metadata gives, each name parsed once. Every later
// step that works per scope (root binding, scope resolution, the manifest
// fit) works on these groups, so a scope shared by many nodes costs once.
#ifndef SEMMAP_SRC_MAPPING_STEPS_GROUP_SCOPES_H_
#define SEMMAP_SRC_MAPPING_STEPS_GROUP_SCOPES_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "mapping/core/mapping_record.h"
#include "mapping/core/scope_resolver.h"
#include "mapping/steps/assess_fit.h"
#include "semmap/graph.h"
#include "semmap/mapping.h"
#include "semmap/rules.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {

// A distinct module scope of the graph: the scope part of a TorchScript node
// name ("/bert/encoder/layer.0/attention/self"), or the deepest module path
// of a dynamo module stack split into atoms. Nodes sharing it share its
// resolution.
struct Scope {
  bool from_metadata = false;
  // Name scopes: the node name's text before its last '/' (a view into
  // the Graph).
  absl::string_view key;
  // Name scopes behind an inliner's prefix ("If_0_then_branch__Inline_0__"
  // before "/encoder/0/conv"): the prefix, which tells apart the sub-models
  // of one file (a view into the Graph); empty otherwise.
  absl::string_view prefix;
  std::string text;  // metadata: the module path the segments point into
  absl::Span<const absl::string_view> segments;  // into GraphScopes::segments
  std::string qualified_class;  // from metadata, when present
  std::size_t nodes = 0;
  // Set by ChooseRootBinding or ResolveScopesUnder (bind_root.h).
  ScopeResolution resolution;
  // Set by ScopeOutcomes (resolve_scopes.h).
  MappingRecord outcome;  // what every node of this scope gets (unmapped if none)
};

// The scopes of one graph, which must outlive it (name scopes view its
// names). Scope addresses are stable for its lifetime, moves included.
// Name scopes are told apart by their key, metadata scopes by the deepest
// module path.
struct GraphScopes {
  std::vector<Scope> all;  // in the order the nodes first name them
  std::vector<absl::string_view> segments;  // every scope's, one after another
  // Per node, its scope or null (no scoped name and no module stack).
  std::vector<Scope*> of_node;
  // Every scope, ordered by its segments (ties in any order): what depends
  // on the order (binding candidates and their cap) does not depend on hash
  // iteration order, and a PrefixResolver shares the steps of neighbours.
  std::vector<Scope*> ordered;
};

// Groups the nodes of `graph` by scope. A node name counts when it starts
// with '/', or continues so after a prefix that eight or more such names
// share (a tool inlined a TorchScript graph: "If_0_then_branch__Inline_0__/
// encoder/0/conv/Conv"; the prefix is learned from the file), and the rules
// do not call it derived from a value name ("<value>_QuantizeLinear"
// describes the value's producer, not the node); otherwise the node's
// exporter module stack (metadata), if any.
GraphScopes GroupScopes(const Graph& graph, const Rules& rules);

// Module paths implied by the scopes alone, for mapping without a manifest,
// sorted, each with the first class a metadata scope gave it (or ""): a
// name scope's dotted path (ScopePath::DottedPath() rules) or a metadata
// path as written, cut to a bounded length (hostile names stay linear), with
// a "_N" call suffix folded into its base when the base also occurs
// ("relu_1" beside "relu").
std::vector<std::pair<std::string, std::string>> DerivedModulePaths(const GraphScopes& scopes);

// Per node, the module its scope names once resolved completely (its
// outcome's module), or kNoModule.
std::vector<ModuleId> ResolvedModulesOfNodes(const GraphScopes& scopes);

// One ScopeSample (assess_fit.h) per scope, viewing `scopes`.
std::vector<ScopeSample> ScopeSamples(const GraphScopes& scopes);

// How a scope reads in evidence: "scope /a/b" or "module stack a.b",
// abbreviated.
std::string ScopeEvidence(const Scope& scope);
// The same, appended to `out` without a string of its own (one per scope
// of a large graph).
void AppendScopeEvidence(const Scope& scope, std::string* out);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_GROUP_SCOPES_H_
