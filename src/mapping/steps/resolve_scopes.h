// The scope step of mapping: each distinct scope of the graph resolved once
// against the manifest under the root binding, and its outcome given to
// every node of the scope (Strategy::kExactScope, kExporterMetadata or
// kScopePrefix; docs/mapping.md sections 2 and 3).
#ifndef SEMMAP_SRC_MAPPING_STEPS_RESOLVE_SCOPES_H_
#define SEMMAP_SRC_MAPPING_STEPS_RESOLVE_SCOPES_H_

#include <vector>

#include "mapping/core/evidence_store.h"
#include "mapping/core/mapping_record.h"
#include "mapping/steps/group_scopes.h"
#include "semmap/manifest.h"
#include "semmap/mapping.h"
#include "semmap/root_binding.h"

namespace semmap {
namespace internal {

// Sets the outcome of every scope of `scopes` from its resolution under
// `*binding` (ChooseRootBinding or ResolveScopesUnder, bind_root.h):
//  - complete: the module, confidence::scope::kExact (lowered when a call
//    suffix was folded, a step was ambiguous, or the exporter's class
//    differs from the manifest's);
//  - a prefix beyond the wrapper resolved: that module, kPrefix;
//  - otherwise unmapped.
// `derived`: the manifest was derived from the scopes themselves (no
// manifest given). Then class conflicts are not checked, every confidence
// is multiplied by confidence::kNoManifestFactor, and the binding's scoped
// and resolved node counts are filled here (ChooseRootBinding fills them
// otherwise). Evidence strings go to `evidence`.
void ScopeOutcomes(const Manifest& manifest, bool derived, GraphScopes* scopes,
                   RootBinding* binding, EvidenceStore* evidence);

// Copies each scope's outcome, when mapped, to the mappings of its nodes.
void ApplyScopeOutcomes(const GraphScopes& scopes, std::vector<MappingRecord>* mappings);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_STEPS_RESOLVE_SCOPES_H_
