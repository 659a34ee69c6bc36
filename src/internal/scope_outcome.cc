#include "internal/scope_outcome.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "internal/confidence.h"

namespace semmap {
namespace internal {
namespace {

namespace scope_confidence = confidence::scope;

// The outcome of a complete resolution.
Mapping ExactOutcome(const Manifest& manifest, bool derived, const Scope& s,
                     EvidenceStore* store) {
  const ScopeResolution& r = s.resolution;
  Mapping m;
  m.module = r.module;
  m.strategy = s.from_metadata ? Strategy::kExporterMetadata : Strategy::kExactScope;
  m.confidence = r.ambiguous     ? scope_confidence::kExactAmbiguous
                 : r.call_suffix ? scope_confidence::kExactCallSuffix
                                 : scope_confidence::kExact;
  std::string evidence = ScopeEvidence(s);
  if (r.call_suffix) absl::StrAppend(&evidence, " (call suffix folded)");
  const std::string& manifest_class = manifest.module(r.module).qualified_class;
  if (!derived && !s.qualified_class.empty() && s.qualified_class != manifest_class) {
    m.confidence = std::min(m.confidence, scope_confidence::kClassMismatch);
    absl::StrAppend(&evidence, "; exporter says ", s.qualified_class);
  }
  m.evidence = store->Intern(evidence);
  return m;
}

}  // namespace

void ScopeOutcomes(const Manifest& manifest, bool derived, GraphScopes* scopes,
                   RootBinding* binding, EvidenceStore* evidence) {
  const std::size_t wrapper_len = binding->wrapper.size();
  for (Scope* scope : scopes->ordered) {
    Scope& s = *scope;
    const ScopeResolution& r = s.resolution;
    if (derived) binding->scoped_nodes += s.nodes;
    if (derived && r.complete()) binding->resolved_nodes += s.nodes;
    Mapping& m = s.outcome;
    if (r.complete()) {
      m = ExactOutcome(manifest, derived, s, evidence);
    } else if (r.module != kNoModule && r.resolved > wrapper_len) {
      m.module = r.module;
      m.strategy = Strategy::kScopePrefix;
      m.confidence = scope_confidence::kPrefix;
      m.evidence = evidence->Intern(absl::StrCat(ScopeEvidence(s), ": resolved ",
                                                 r.resolved - wrapper_len, " of ",
                                                 r.total - wrapper_len, " segments"));
    } else {
      continue;
    }
    if (derived) m.confidence *= confidence::kNoManifestFactor;
  }
}

void ApplyScopeOutcomes(const GraphScopes& scopes, std::vector<Mapping>* mappings) {
  for (std::size_t i = 0; i < scopes.of_node.size(); ++i) {
    const Scope* s = scopes.of_node[i];
    if (s != nullptr && s->outcome.mapped()) (*mappings)[i] = s->outcome;
  }
}

}  // namespace internal
}  // namespace semmap
