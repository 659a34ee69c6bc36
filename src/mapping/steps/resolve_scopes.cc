#include "mapping/steps/resolve_scopes.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/parallel.h"
#include "mapping/core/confidence.h"

namespace semmap {
namespace internal {
namespace {

namespace scope_confidence = confidence::scope;

// From this many scopes on, outcomes are computed in two halves on two
// cores.
constexpr std::size_t kParallelScopes = std::size_t{1} << 13;

// The outcome of a complete resolution; its evidence is appended to `text`.
MappingRecord ExactOutcome(const Manifest& manifest, bool derived, const Scope& s, std::string* text) {
  const ScopeResolution& r = s.resolution;
  MappingRecord m;
  m.module = r.module;
  m.strategy = s.from_metadata ? Strategy::kExporterMetadata : Strategy::kExactScope;
  m.confidence = r.ambiguous     ? scope_confidence::kExactAmbiguous
                 : r.call_suffix ? scope_confidence::kExactCallSuffix
                                 : scope_confidence::kExact;
  AppendScopeEvidence(s, text);
  if (r.call_suffix) absl::StrAppend(text, " (call suffix folded)");
  const absl::string_view manifest_class = manifest.module(r.module).qualified_class;
  if (!derived && !s.qualified_class.empty() && s.qualified_class != manifest_class) {
    m.confidence = std::min(m.confidence, scope_confidence::kClassMismatch);
    absl::StrAppend(text, "; exporter says ", s.qualified_class);
  }
  return m;
}

// The outcomes of scopes [from, to), their evidence texts one after the
// other in `text`, each scope's (offset, length) in spans[i].
void OutcomesOf(const Manifest& manifest, bool derived, std::size_t wrapper_len,
                absl::Span<Scope* const> ordered, std::size_t from, std::size_t to,
                std::string* text, std::pair<std::size_t, std::size_t>* spans) {
  for (std::size_t i = from; i < to; ++i) {
    Scope& s = *ordered[i];
    const ScopeResolution& r = s.resolution;
    MappingRecord& m = s.outcome;
    const std::size_t begin = text->size();
    if (r.complete()) {
      m = ExactOutcome(manifest, derived, s, text);
    } else if (r.module != kNoModule && r.resolved > wrapper_len) {
      m.module = r.module;
      m.strategy = Strategy::kScopePrefix;
      m.confidence = scope_confidence::kPrefix;
      AppendScopeEvidence(s, text);
      absl::StrAppend(text, ": resolved ", r.resolved - wrapper_len, " of ",
                      r.total - wrapper_len, " segments");
    } else {
      continue;
    }
    if (derived) m.confidence *= confidence::kNoManifestFactor;
    spans[i] = {begin, text->size() - begin};
  }
}

}  // namespace

void ScopeOutcomes(const Manifest& manifest, bool derived, GraphScopes* scopes,
                   RootBinding* binding, EvidenceStore* evidence) {
  const std::vector<Scope*>& ordered = scopes->ordered;
  const std::size_t n = ordered.size();
  const std::size_t wrapper_len = binding->wrapper.size();
  if (derived) {
    for (const Scope* s : ordered) {
      binding->scoped_nodes += s->nodes;
      if (s->resolution.complete()) binding->resolved_nodes += s->nodes;
    }
  }
  // Each scope's evidence names the scope itself, so the texts are
  // distinct: they are kept whole, one text per half, without a lookup.
  std::string text[2];
  std::vector<std::pair<std::size_t, std::size_t>> spans(n);
  const std::size_t mid = n / 2;
  RunBoth(n >= kParallelScopes,
          [&] {
            OutcomesOf(manifest, derived, wrapper_len, ordered, mid, n, &text[1], spans.data());
          },
          [&] {
            OutcomesOf(manifest, derived, wrapper_len, ordered, 0, mid, &text[0], spans.data());
          });
  const absl::string_view kept[2] = {evidence->Keep(text[0]), evidence->Keep(text[1])};
  for (std::size_t i = 0; i < n; ++i) {
    MappingRecord& m = ordered[i]->outcome;
    if (m.mapped()) m.evidence = kept[i < mid ? 0 : 1].substr(spans[i].first, spans[i].second);
  }
}

void ApplyScopeOutcomes(const GraphScopes& scopes, std::vector<MappingRecord>* mappings) {
  for (std::size_t i = 0; i < scopes.of_node.size(); ++i) {
    const Scope* s = scopes.of_node[i];
    if (s != nullptr && s->outcome.mapped()) (*mappings)[i] = s->outcome;
  }
}

}  // namespace internal
}  // namespace semmap
