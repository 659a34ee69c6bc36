#include "internal/manifest_fit.h"

#include <algorithm>
#include <string>

#include "absl/types/span.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "internal/file_io.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {
namespace {

// Below this many names (scoped nodes plus parameter-named initializers)
// the graph says too little to judge a manifest.
constexpr std::size_t kMinEvidence = 8;
// A fitting manifest resolves at least this share of the names. Own
// manifests resolve 0.95 or more on every fixture, task models against
// their base model's manifest about 0.9; another model's, under 0.2
// (docs/mapping.md, "Manifest fit").
constexpr double kMinAgreement = 0.5;
// Distinct scopes and parameter-named initializers, each: own manifests
// name 0.96 or more of the scopes literally on every fixture (a tied
// embedding's second scope is the usual miss) and every initializer; other
// architectures under 0.9 of either, apart from near twins whose module
// paths coincide (docs/mapping.md).
constexpr double kMinShare = 0.9;
// Conflicts (a scope's class, a parameter's size or existence): one in this
// many is a misfit; another size of the same architecture differs in
// nearly every parameter, a sibling architecture in every class.
constexpr std::size_t kConflictShare = 10;
// Trailing items of a repeated container that nothing in the graph touches:
// a misfit when they are at least this share of the container. An export
// may drop a dead last layer (a feature taken from the penultimate one),
// never a quarter of them.
constexpr std::size_t kUnusedItemShare = 4;

// "encoder.layer.0.output.dense.weight": dotted identifier atoms, as torch
// names parameters; not an exporter's own name ("onnx::MatMul_12",
// "val_3", "/encoder/.../Constant_output_0").
bool ParameterLike(absl::string_view name) {
  if (name.empty() || name.find('.') == absl::string_view::npos) return false;
  if (absl::ascii_isdigit(static_cast<unsigned char>(name.front()))) return false;
  char previous = '.';
  for (char c : name) {
    const bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    if (!ok || (c == '.' && previous == '.')) return false;
    previous = c;
  }
  return previous != '.';
}

std::int64_t ElementCount(absl::Span<const std::int64_t> dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || (d != 0 && n > INT64_MAX / d)) return -1;
    n *= d;
  }
  return n;
}

// The manifest module a scope names literally: its manifest-free dotted
// path (ScopePath rules) under the root binding, or kNoModule. Scope
// resolution also finds modules through skipped levels, which lets a scope
// resolve in a similar architecture ("/model/layers.0/self_attn" in an
// encoder-decoder's "model.decoder.layers.0.self_attn"); a fitting
// manifest has the path itself.
// Names outside the binding's wrapper (a task head's "classifier" around
// a base model's manifest) set `*outside`: they say nothing of the fit.
ModuleId LiteralModule(const Manifest& manifest, const RootBinding& binding,
                       absl::string_view dotted, bool* outside) {
  *outside = false;
  for (const std::string& segment : binding.wrapper) {
    if (!absl::ConsumePrefix(&dotted, segment) ||
        (!dotted.empty() && !absl::ConsumePrefix(&dotted, "."))) {
      *outside = true;
      return kNoModule;
    }
  }
  const std::string& root = manifest.module(binding.root).path;
  if (root.empty()) return manifest.find(dotted);
  return manifest.find(dotted.empty() ? root : absl::StrCat(root, ".", dotted));
}

// The module `scope` names literally when its resolution tells it already,
// else kNoModule (then LiteralModule says). A complete resolution whose
// every step found "<parent path>.<segment>" itself (no module searched
// for below, no call suffix folded) reached "<root path>.<segments joined
// by '.'>", which is the literal path when the scope's dotted path is its
// segments joined: a metadata path without empty atoms, or names without
// a container repeating its name ("layer1/layer1.0", which DottedPathOf
// folds). Scopes outside the wrapper never resolve completely.
ModuleId ResolvedLiterally(const ScopeSample& scope) {
  const ScopeResolution* r = scope.resolution;
  if (r == nullptr || !r->complete() || r->indirect != 0 || r->call_suffix) return kNoModule;
  if (scope.from_metadata) {
    std::size_t joined = 0;
    for (absl::string_view segment : scope.segments) joined += segment.size() + 1;
    return joined == scope.path.size() + 1 ? r->module : kNoModule;
  }
  for (std::size_t i = 1; i < scope.segments.size(); ++i) {
    const absl::string_view previous = scope.segments[i - 1];
    const absl::string_view segment = scope.segments[i];
    if (segment.size() > previous.size() && absl::StartsWith(segment, previous) &&
        segment[previous.size()] == '.') {
      return kNoModule;
    }
  }
  return r->module;
}

// The module a dotted tensor name lives in (the name without its last
// atom), or kNoModule.
ModuleId ModuleOfTensor(const Manifest& manifest, const RootBinding& binding,
                        absl::string_view name, bool* outside) {
  return LiteralModule(manifest, binding, name.substr(0, name.rfind('.')), outside);
}

// "weight_bias" of a module with a "weight": a name the exporter made from
// one of the module's own tensors.
bool DerivedFromOwnTensor(const ModuleInfo& info, absl::string_view name) {
  const absl::string_view local = name.substr(name.rfind('.') + 1);
  for (const auto* list : {&info.parameters, &info.buffers}) {
    for (const TensorSpec& spec : *list) {
      if (local.size() > spec.name.size() + 1 && absl::StartsWith(local, spec.name) &&
          local[spec.name.size()] == '_') {
        return true;
      }
    }
  }
  return false;
}

const TensorSpec* FindSpec(const ModuleInfo& info, absl::string_view local) {
  for (const auto* list : {&info.parameters, &info.buffers}) {
    for (const TensorSpec& spec : *list) {
      if (spec.name == local) return &spec;
    }
  }
  return nullptr;
}

// The module whose evidence touches `id`: marks it and its ancestors.
void Touch(const Manifest& manifest, ModuleId id, std::vector<bool>* touched) {
  for (; id != kNoModule && !(*touched)[id]; id = manifest.module(id).parent) {
    (*touched)[id] = true;
  }
}

// The container with the most untouched trailing items among those with
// at least one touched item; sets `*container` and returns the count.
std::size_t UnusedTrailingItems(const Manifest& manifest, const std::vector<bool>& touched,
                                ModuleId* container) {
  std::size_t worst = 0;
  for (std::size_t i = 0; i < manifest.size(); ++i) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(i));
    if (!info.numbered_children || !touched[i]) continue;
    std::size_t last_touched = 0;
    for (std::size_t k = 0; k < info.children.size(); ++k) {
      if (touched[info.children[k]]) last_touched = k + 1;
    }
    const std::size_t unused = info.children.size() - last_touched;
    if (unused == 0 || unused * kUnusedItemShare < info.children.size()) continue;
    if (unused > worst) {
      worst = unused;
      *container = static_cast<ModuleId>(i);
    }
  }
  return worst;
}

// Counts the nodes whose scope lies below the root, and those whose scope
// the manifest has literally; touches those modules. The example of a
// missing scope (and of a conflicting class) is the smallest in text order,
// so messages do not depend on the order of `scopes`.
void CheckScopes(const std::vector<ScopeSample>& scopes, const Manifest& manifest,
                 const RootBinding& binding, ManifestFit* fit, ManifestFit* outside,
                 std::vector<bool>* touched, std::string* first_scope) {
  absl::string_view conflict_path;
  for (const ScopeSample& scope : scopes) {
    if (scope.segments.empty()) continue;  // the root scope, true of any manifest
    bool beyond_wrapper = false;
    ModuleId id = ResolvedLiterally(scope);
    if (id == kNoModule) {
      const std::string dotted =
          scope.from_metadata ? std::string(scope.path) : DottedPathOf(scope.segments);
      id = LiteralModule(manifest, binding, dotted, &beyond_wrapper);
    }
    if (beyond_wrapper) {
      ++outside->distinct_scopes;
      outside->scoped_nodes += scope.nodes;
      continue;
    }
    ++fit->distinct_scopes;
    fit->scoped_nodes += scope.nodes;
    if (id == kNoModule) {
      const absl::string_view text = scope.from_metadata ? scope.path : scope.name_scope;
      if (first_scope->empty() || text < *first_scope) *first_scope = std::string(text);
      continue;
    }
    // The exporter knows each module's class: another architecture with
    // the same paths (a sibling model family) shows here.
    const std::string& manifest_class = manifest.module(id).qualified_class;
    if (!scope.qualified_class.empty() && scope.qualified_class != manifest_class) {
      ++fit->class_conflicts;
      if (conflict_path.empty() || scope.path < conflict_path) {
        conflict_path = scope.path;
        fit->first_class_conflict = absl::StrCat(
            "module \"", Abbreviate(std::string(scope.path), 80), "\" is ",
            Abbreviate(std::string(scope.qualified_class), 80), " in the graph, ",
            Abbreviate(manifest_class, 80), " in the manifest");
      }
      continue;
    }
    ++fit->resolved_scopes;
    fit->resolved_nodes += scope.nodes;
    Touch(manifest, id, touched);
  }
}

}  // namespace

// Long (about 115 lines): the counting steps are helpers (CheckScopes,
// UnusedTrailingItems); what stays is the verdict, whose thresholds and
// one-line evidence depend on all the counts at once and read best in one
// place.
ManifestFit AssessManifestFit(const Graph& graph, const std::vector<ScopeSample>& scopes,
                              const Manifest& manifest, const Rules& rules,
                              const RootBinding& binding, const TensorEvidence& tensors) {
  ManifestFit fit;
  std::vector<bool> touched(manifest.size(), false);
  std::string first_scope;
  // Names outside the binding's wrapper: ignored while they are the
  // smaller part (a task head), counted as unresolved otherwise (a wrapper
  // another model's manifest made up from one stray scope).
  ManifestFit outside;
  CheckScopes(scopes, manifest, binding, &fit, &outside, &touched, &first_scope);
  std::string first_unknown;
  std::string first_conflict;
  for (const TensorInfo& t : graph.initializers()) {
    const absl::string_view name = rules.stripValueSuffixes(t.name);
    if (!ParameterLike(name)) continue;
    const ModuleId owner = tensors.ParameterOwner(name);
    bool beyond_wrapper = false;
    const ModuleId module =
        owner != kNoModule ? owner : ModuleOfTensor(manifest, binding, name, &beyond_wrapper);
    if (beyond_wrapper) {
      ++outside.named_tensors;
      continue;
    }
    ++fit.named_tensors;
    if (owner == kNoModule) {
      if (module == kNoModule) {
        if (first_unknown.empty()) first_unknown = std::string(name);
      } else if (DerivedFromOwnTensor(manifest.module(module), name)) {
        // A tensor the exporter derived from the module's parameter
        // ("conv.weight_bias" after folding a BatchNorm into it).
        ++fit.matched_tensors;
      } else if (++fit.shape_mismatches == 1) {
        // The module is known but has no such parameter: a sibling
        // architecture (biases where the manifest's model has none).
        first_conflict = absl::StrCat("initializer \"", Abbreviate(std::string(name), 80),
                                      "\" is not a parameter of the manifest's module");
      }
      continue;
    }
    ++fit.matched_tensors;
    Touch(manifest, owner, &touched);
    const TensorSpec* spec = FindSpec(manifest.module(owner), name.substr(name.rfind('.') + 1));
    if (spec == nullptr || t.dims.empty()) continue;  // scalar or unknown shape
    const std::int64_t have = ElementCount(t.dims);
    const std::int64_t want = ElementCount(spec->shape);
    if (have < 0 || want < 0 || have == want) continue;
    if (++fit.shape_mismatches == 1) {
      first_conflict = absl::StrCat("initializer \"", Abbreviate(std::string(name), 80),
                                    "\" has ", have, " elements, the manifest's ", want);
    }
  }
  // Only scopes reach every item of a repeated container: parameter names
  // alone may not (a fresh model's identical tensors share one name).
  ModuleId container = kNoModule;
  if (fit.resolved_nodes >= kMinEvidence) {
    fit.unused_items = UnusedTrailingItems(manifest, touched, &container);
  }

  if (outside.scoped_nodes + outside.named_tensors > fit.scoped_nodes + fit.named_tensors) {
    fit.scoped_nodes += outside.scoped_nodes;
    fit.distinct_scopes += outside.distinct_scopes;
    fit.named_tensors += outside.named_tensors;
  }
  const std::size_t names = fit.scoped_nodes + fit.named_tensors;
  const std::size_t agreeing = fit.resolved_nodes + fit.matched_tensors;
  fit.checked = names >= kMinEvidence;
  fit.evidence = absl::StrCat(fit.resolved_nodes, " of ", fit.scoped_nodes, " scoped nodes (",
                              fit.resolved_scopes, " of ", fit.distinct_scopes,
                              " scopes) and ", fit.matched_tensors, " of ", fit.named_tensors,
                              " parameter-named initializers resolve");
  if (!fit.checked) {
    absl::StrAppend(&fit.evidence, ": too few names to check the manifest");
    return fit;
  }
  fit.fits = false;
  const auto share_below = [](std::size_t part, std::size_t whole, double floor) {
    return whole > 0 && static_cast<double>(part) < floor * static_cast<double>(whole);
  };
  // Classes first when they are what disagrees (the paths all exist).
  const std::size_t missing_scopes =
      fit.distinct_scopes - fit.resolved_scopes - fit.class_conflicts;
  const bool class_misfit = fit.class_conflicts * kConflictShare > fit.resolved_scopes;
  const auto explain_classes = [&fit] {
    absl::StrAppend(&fit.evidence, ", but ", fit.class_conflicts,
                    " of the scopes have another class (", fit.first_class_conflict, ")");
  };
  if (class_misfit && fit.class_conflicts > missing_scopes) {
    explain_classes();
  } else if (share_below(agreeing, names, kMinAgreement) ||
      share_below(fit.resolved_scopes, fit.distinct_scopes, kMinShare) ||
      (fit.named_tensors >= kMinEvidence &&
       share_below(fit.matched_tensors, fit.named_tensors, kMinShare))) {
    const std::string& example = !first_scope.empty() ? first_scope : first_unknown;
    if (!example.empty()) {
      absl::StrAppend(&fit.evidence, " (e.g. \"", Abbreviate(example, 80),
                      "\" is not in the manifest)");
    }
  } else if (class_misfit) {
    explain_classes();
  } else if (fit.shape_mismatches > 0 &&
             fit.shape_mismatches * kConflictShare >= fit.matched_tensors) {
    absl::StrAppend(&fit.evidence, ", but ", fit.shape_mismatches, " contradict it (",
                    first_conflict, ")");
  } else if (fit.unused_items > 0) {
    const ModuleInfo& info = manifest.module(container);
    absl::StrAppend(&fit.evidence, ", but \"", Abbreviate(info.path, 80), "\" has ",
                    info.children.size(), " items in the manifest and the graph uses ",
                    info.children.size() - fit.unused_items);
  } else {
    fit.fits = true;
  }
  return fit;
}

}  // namespace internal
}  // namespace semmap
