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
#include "semmap/manifest.h"
#include "semmap/root_binding.h"

namespace semmap {
namespace internal {

// Every plausible binding, unscored, at most 256 (a hostile manifest may
// offer 10^5 callers of one segment): first the identity (ONNX root ==
// manifest root); then each module that directly calls a module whose
// variable name is a scope's first segment (with and without a "_N" call
// suffix); then each run of up to `max_wrapper_segments` leading segments
// that name no module. `ordered` is GraphScopes::ordered: the result
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

// Sets each scope's `resolution` under `binding`. Many scopes are resolved
// on two cores.
void ResolveScopesUnder(const Manifest& manifest, const RootBinding& binding,
                        absl::Span<Scope* const> ordered);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_BIND_ROOT_H_
