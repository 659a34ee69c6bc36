// Root binding: where the ONNX root scope sits in the manifest (RootBinding,
// mapper.h). The graph's root may be the manifest's root, a submodule of it
// (an encoder exported alone: its scopes start at "layer.0"), or lie inside
// ONNX-only scopes around it (a task model's "/bert/..." names against its
// base model's manifest: wrapper "bert"). Every plausible binding is scored
// on the graph's distinct scopes and the best one serves every node.
#ifndef SEMMAP_SRC_MAPPING_STEPS_BIND_ROOT_H_
#define SEMMAP_SRC_MAPPING_STEPS_BIND_ROOT_H_

#include <vector>

#include "absl/types/span.h"
#include "mapping/steps/group_scopes.h"
#include "semmap/graph.h"
#include "semmap/manifest.h"
#include "semmap/root_binding.h"

namespace semmap {
namespace internal {

// Every plausible binding, unscored, at most 256 (a hostile manifest may
// offer 10^5 callers of one segment): first the identity (ONNX root ==
// manifest root); then each module that directly calls a module whose
// variable name is a scope's first segment (with and without a "_N" call
// suffix); then, for a first segment that names no module, each of the
// root's first 16 children whose attribute is the segment spelt with other
// case or underscores ("_model" for "model") as the module it names (root:
// the child, wrapper: the segment); then each run of up to
// `max_wrapper_segments` leading segments that name no module. `ordered` is GraphScopes::ordered: the result
// depends only on the scopes, not on hash iteration order.
std::vector<RootBinding> RootBindingCandidates(const Manifest& manifest,
                                               absl::Span<Scope* const> ordered,
                                               int max_wrapper_segments);

// The best candidate, with its counts filled (scoped, resolved and
// indirect-step nodes under it): most resolved nodes, then fewest indirect
// steps (an ancestor bound as root resolves through indirect searches),
// then fewest wrapper segments, then the shallowest root, then the lowest
// module id and wrapper text, so that the choice is deterministic. Leaves
// each scope's `resolution` under the binding chosen (as
// ResolveScopesUnder would).
RootBinding ChooseRootBinding(const Manifest& manifest, absl::Span<Scope* const> ordered,
                              int max_wrapper_segments);

// A graph without scopes (`binding->scoped_nodes` 0: names stripped, or
// metadata dropped by a tool) learns a wrapper from the initializers' names: when the leading
// atoms (up to `max_wrapper_segments`) of the parameter-named initializers
// name no module and, dropped, make at least half of those names and more
// than as written parameters or buffers of the manifest (a wrapper
// module's "inner.embeddings.LayerNorm.bias" against the inner model's
// manifest), they become `binding->wrapper`. Linear in the initializers.
void BindInitializerWrapper(const Graph& graph, const Manifest& manifest,
                            int max_wrapper_segments, RootBinding* binding);

// ChooseRootBinding; when `tied` is given, it receives the candidates as
// good as the best but for their module (equal sub-models of the manifest).
RootBinding ChooseRootBinding(const Manifest& manifest, absl::Span<Scope* const> ordered,
                              int max_wrapper_segments, std::vector<RootBinding>* tied);

// ChooseRootBinding for a file holding several sub-models (scopes behind
// different inliners' prefixes, Scope::prefix: one per If branch): each
// sub-model's scopes are bound on their own, and resolved under their
// binding. Where equal sub-models of the manifest bind equally well, each
// sub-model (in the order the file's nodes first name them) takes the next
// one not taken (in the manifest's order) and its scopes' resolutions are
// marked ambiguous (their answers are a guess). `ordered` must point into
// one array of scopes (GraphScopes::all). Returns the binding of the
// sub-model with the most scoped nodes, its counts summed over all; the
// same as ChooseRootBinding when there is one sub-model.
RootBinding ChooseRootBindings(const Manifest& manifest, absl::Span<Scope* const> ordered,
                               int max_wrapper_segments);

// Sets each scope's `resolution` under `binding`. Many scopes are resolved
// on two cores.
void ResolveScopesUnder(const Manifest& manifest, const RootBinding& binding,
                        absl::Span<Scope* const> ordered);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_BIND_ROOT_H_
