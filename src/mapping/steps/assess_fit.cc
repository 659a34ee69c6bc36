#include "mapping/steps/assess_fit.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "base/text.h"
#include "graph/exporter_metadata.h"
#include "graph/node_fields.h"
#include "mapping/core/weight_shapes.h"
#include "mapping/steps/derived_names.h"
#include "mapping/steps/fit_notes.h"
#include "mapping/steps/fit_signatures.h"
#include "mapping/steps/fit_weights.h"
#include "mapping/steps/repeated_items.h"
#include "manifest/rule_queries.h"
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
// Parameter names are full module paths: from this many on, most of them
// missing says another model even where scopes agree. Also the fewest
// unnamed weights judged by size.
constexpr std::size_t kFewTensors = 3;
// Unnamed weights of a size their module's parameters do not have: a
// misfit when more than one in this many.
constexpr std::size_t kWeightMismatchShare = 4;
// Scoped nodes of a kind the signatures must explain ("signature_checked_ops":
// normalisations) that no normalisation of their module's recorded forward
// may be exported as (steps/fit_signatures.h): a misfit from this many modules on, when they
// are more than one in this many of the checked nodes. Own manifests have
// none on any fixture; a twin that swaps BatchNorm for GroupNorm, one per
// norm layer.
constexpr std::size_t kMinOpConflictModules = 3;
constexpr std::size_t kOpConflictShare = 10;
// Folds whose folded module runs no operation exporters fold (rules
// "folded_ops"; steps/fit_signatures.h): a misfit from this many on, when
// they are most of the folds. Every fixture with its own manifest has none.
constexpr std::size_t kMinFoldConflicts = 3;

// False when no prefix of `name` is ParameterLike: a prefix keeps the first
// character and has a '.' only if `name` has one. StripValueSuffixes only
// removes suffixes.
bool MayStartParameterLike(absl::string_view name) {
  if (name.empty() || name.find('.') == absl::string_view::npos) return false;
  const unsigned char first = static_cast<unsigned char>(name.front());
  return absl::ascii_isalpha(first) || first == '_';
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
  const absl::string_view root = manifest.path(binding.root);
  if (root.empty()) return manifest.find(dotted);
  return manifest.find(dotted.empty() ? root : absl::StrCat(root, ".", dotted));
}

// The module `scope` names literally when its resolution tells it already,
// else kNoModule (then LiteralModule says). A complete resolution whose
// every step found "<parent path>.<segment>" itself (no module searched
// for below, no call suffix folded) reached the module whose scope torch
// names with exactly these segments. For a metadata path, that is its
// literal path when the path has no empty atoms. Scopes outside the
// wrapper never resolve completely.
ModuleId ResolvedLiterally(const ScopeSample& scope) {
  const ScopeResolution* r = scope.resolution;
  if (r == nullptr || !r->complete() || r->indirect != 0 || r->call_suffix) return kNoModule;
  if (scope.from_metadata) {
    std::size_t joined = 0;
    for (absl::string_view segment : scope.segments) joined += segment.size() + 1;
    return joined == scope.path.size() + 1 ? r->module : kNoModule;
  }
  return r->module;
}

// The module a dotted tensor name lives in (the name without its last
// atom), or kNoModule.
ModuleId ModuleOfTensor(const Manifest& manifest, const RootBinding& binding,
                        absl::string_view name, bool* outside) {
  return LiteralModule(manifest, binding, name.substr(0, name.rfind('.')), outside);
}

// The module a TorchScript scope names once the "_N" suffixes of later
// calls are dropped ("/layer1/layer1.0/relu_1" -> "layer1.0.relu"), or
// kNoModule. A segment loses its suffix only where the path up to it is not
// in the manifest as written, so a module named "conv_1" stays itself.
ModuleId LiteralWithoutCallSuffixes(const Manifest& manifest, const RootBinding& binding,
                                    absl::Span<const absl::string_view> segments) {
  std::vector<absl::string_view> kept(segments.begin(), segments.end());
  bool dropped = false;
  bool outside = false;
  ModuleId module = kNoModule;  // of the path up to segment i
  for (std::size_t i = binding.wrapper.size(); i < kept.size(); ++i) {
    const auto prefix = absl::MakeConstSpan(kept.data(), i + 1);
    module = LiteralModule(manifest, binding, DottedPathOf(prefix), &outside);
    if (module != kNoModule) continue;
    absl::string_view base;
    long call = 0;
    if (outside || !SplitCallSuffix(kept[i], &base, &call)) return kNoModule;
    kept[i] = base;
    module = LiteralModule(manifest, binding, DottedPathOf(prefix), &outside);
    if (module == kNoModule) return kNoModule;
    dropped = true;
  }
  return dropped ? module : kNoModule;
}

// The module a scope names, and the note it needs when that is not the
// manifest's literal path: a later call of a module, or a module reached
// past one whose forward did not run (the mapper's own resolution, when it
// is complete and unambiguous). Module stacks of exporter metadata are
// full module paths: the manifest has them literally or not at all.
ModuleId NotedModule(const Manifest& manifest, const RootBinding& binding,
                     const ScopeSample& scope, FitNoteKind* why) {
  if (scope.from_metadata) return kNoModule;
  ModuleId id = LiteralWithoutCallSuffixes(manifest, binding, scope.segments);
  if (id != kNoModule) {
    *why = FitNoteKind::kReusedCall;
    return id;
  }
  const ScopeResolution* r = scope.resolution;
  if (r == nullptr || !r->complete() || r->ambiguous) return kNoModule;
  *why = FitNoteKind::kOutsideManifestRoot;
  return r->module;
}

// Counts the nodes whose scope lies below the root, and those whose scope
// names a manifest module (literally, or for a reason noted); touches those
// modules. Examples (a missing scope, a conflicting class) are the smallest
// in text order, so messages do not depend on the order of `scopes`.
void CheckScopes(const std::vector<ScopeSample>& scopes, const Manifest& manifest,
                 const RootBinding& binding, ManifestFit* fit, ManifestFit* outside,
                 NoteTally* notes, NoteTally* outside_notes, std::vector<bool>* touched,
                 std::string* first_scope) {
  absl::string_view conflict_path;
  for (const ScopeSample& scope : scopes) {
    if (scope.segments.empty()) continue;  // the root scope, true of any manifest
    const absl::string_view text = scope.from_metadata ? scope.path : scope.name_scope;
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
      outside_notes->Add(FitNoteKind::kOutsideManifestRoot, text, scope.nodes);
      continue;
    }
    ++fit->distinct_scopes;
    fit->scoped_nodes += scope.nodes;
    bool noted = false;
    FitNoteKind why = FitNoteKind::kReusedCall;
    if (id == kNoModule) {
      id = NotedModule(manifest, binding, scope, &why);
      noted = id != kNoModule;
    }
    if (id == kNoModule) {
      if (first_scope->empty() || text < *first_scope) *first_scope = std::string(text);
      continue;
    }
    // The exporter knows each module's class: another architecture with
    // the same paths (a sibling model family) shows here.
    const absl::string_view manifest_class = manifest.module(id).qualified_class;
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
    if (noted) notes->Add(why, text, scope.nodes);
    ++fit->resolved_scopes;
    fit->resolved_nodes += scope.nodes;
    Touch(manifest, id, touched);
  }
}

// Whether initializer `t` is the data some op carries on unchanged (input 0
// of a DequantizeLinear, a Transpose: rules "weight_passthrough_ops"): a
// quantized parameter ("<weight>_quantized") has its parameter's elements,
// whatever its name says; its scale and zero point are other inputs.
bool CarriedAsData(const Graph& graph, const OpTraits& ops, const TensorInfo& t) {
  const ValueId v = graph.value(t.name);
  if (v == kNoValue) return false;
  const NodeFields nodes(graph);
  for (NodeId c : graph.consumers(v)) {
    if (!ops.IsWeightPassthrough(c)) continue;
    const absl::Span<const ValueId> inputs = nodes.inputValues(c);
    if (!inputs.empty() && inputs[0] == v) return true;
  }
  return false;
}

// The name an initializer is judged by (CheckTensors).
struct TensorName {
  enum Kind {
    kSkipped,  // no name a parameter could have
    kDerived,  // a tensor a tool derived from `owner`'s parameter
    kJudged,   // `name`, of `owner` (kNoModule: no module's literally)
  };
  Kind kind = kJudged;
  absl::string_view name;
  ModuleId owner = kNoModule;
};

// CheckTensors, one initializer at a time: its name read (ReadName), then
// judged without an owner (JudgeUnowned) or by its size (JudgeSize).
class TensorCheck {
 public:
  TensorCheck(const Graph& graph, const Manifest& manifest, const Rules& rules,
              const OpTraits& ops, const RootBinding& binding, const TensorEvidence& tensors,
              ManifestFit* fit, ManifestFit* outside, NoteTally* notes, NoteTally* outside_notes,
              std::vector<bool>* touched, std::string* first_unknown, std::string* first_conflict)
      : graph_(graph), manifest_(manifest), rules_(rules), ops_(ops), binding_(binding),
        tensors_(tensors), derived_names_(manifest), fit_(fit), outside_(outside), notes_(notes),
        outside_notes_(outside_notes), touched_(touched), first_unknown_(first_unknown),
        first_conflict_(first_conflict) {}

  void Check(const TensorInfo& t) {
    const TensorName read = ReadName(t);
    if (read.kind == TensorName::kSkipped) return;
    if (read.kind == TensorName::kDerived) {
      ++fit_->named_tensors;
      ++fit_->matched_tensors;
      Touch(manifest_, read.owner, touched_);
      return;
    }
    const absl::string_view name = read.name;
    bool beyond_wrapper = false;
    const ModuleId module = read.owner != kNoModule
                                ? read.owner
                                : ModuleOfTensor(manifest_, binding_, name, &beyond_wrapper);
    if (beyond_wrapper) {
      ++outside_->named_tensors;
      outside_notes_->Add(FitNoteKind::kOutsideManifestRoot, name, 0);
      return;
    }
    ++fit_->named_tensors;
    if (read.owner == kNoModule) {
      JudgeUnowned(name, module);
      return;
    }
    ++fit_->matched_tensors;
    Touch(manifest_, read.owner, touched_);
    JudgeSize(t, name, read.owner);
  }

 private:
  // The name as written first; then without the suffixes the rules strip
  // from derived values ("x_quantized"); then the parameter's name a tool
  // embedded in its own.
  TensorName ReadName(const TensorInfo& t) const {
    TensorName read;
    absl::string_view& name = read.name;
    ModuleId& owner = read.owner;
    name = t.name;
    owner = ParameterLikeName(name) ? tensors_.LiteralOwner(name) : kNoModule;
    if (owner != kNoModule) return read;
    // The rules' patterns run only where a stripped name could be
    // parameter-like (most exporter names, "onnx::MatMul_12" or
    // "/a/Constant_output_0", cannot).
    const absl::string_view stripped =
        MayStartParameterLike(name) ? internal::RuleQueries(rules_).StripValueSuffixes(t.name)
                                    : name;
    if (stripped.size() != name.size() && ParameterLikeName(stripped)) {
      const ModuleId stripped_owner = tensors_.LiteralOwner(stripped);
      if (stripped_owner != kNoModule || !ParameterLikeName(name)) {
        name = stripped;
        owner = stripped_owner;
      }
    }
    if (!ParameterLikeName(name)) return {TensorName::kSkipped, {}, kNoModule};
    // A tensor a tool derived from a parameter and named after it (rules
    // "derived_tensor_suffixes": a quantizer's per-reader copy
    // "<bias>0_quantized"): its module's, of a shape of its own.
    const ModuleId derived = owner == kNoModule ? tensors_.SuffixedOwner(t.name) : kNoModule;
    if (derived != kNoModule) return {TensorName::kDerived, {}, derived};
    // A tool's name with the parameter's inside it (a quantizer's
    // "q_output_<parameter>_1"): the parameter's evidence, judged like
    // its own name. A name no parameter hides in is judged as written.
    if (owner == kNoModule) {
      const absl::string_view embedded = tensors_.EmbeddedParameter(t.name);
      if (!embedded.empty()) {
        name = embedded;
        owner = tensors_.LiteralOwner(embedded);
      }
    }
    return read;
  }

  // A name no parameter of `module` (kNoModule: no module) has.
  void JudgeUnowned(absl::string_view name, ModuleId module) {
    if (module == kNoModule) {
      if (first_unknown_->empty() || name < *first_unknown_) *first_unknown_ = std::string(name);
    } else if (derived_names_.DerivedFromOwnTensor(module, name)) {
      // A tensor the exporter derived from the module's parameter
      // ("conv.weight_bias" after folding a BatchNorm into it).
      ++fit_->matched_tensors;
    } else if (!internal::RuleQueries(rules_).IsLibraryModule(manifest_.module(module))) {
      // A constant the module's own forward created and the exporter
      // named after it; a library module creates none.
      ++fit_->matched_tensors;
      notes_->Add(FitNoteKind::kCreatedInForward, name, 0);
    } else if (++fit_->shape_mismatches == 1) {
      // A library module without that parameter: a sibling architecture
      // (biases where the manifest's model has none).
      *first_conflict_ = absl::StrCat("initializer \"", Abbreviate(std::string(name), 80),
                                      "\" is not a parameter of the manifest's module");
    }
  }

  // Initializer `t`, named `name` after a parameter of `owner`: its size
  // against the parameter's.
  void JudgeSize(const TensorInfo& t, absl::string_view name, ModuleId owner) {
    // A tensor named after a parameter with a quantizer's suffix is derived
    // from it (its scale, zero point, packed blocks): its shape is its own,
    // unless it is the quantized parameter itself, carried on as data, or
    // the parameter under a prefix alone (a wrapper's).
    if (name.size() != t.name.size() && !absl::EndsWith(t.name, name) &&
        !CarriedAsData(graph_, ops_, t)) {
      return;
    }
    const TensorSpec* spec = manifest_.findTensor(owner, name.substr(name.rfind('.') + 1));
    if (spec == nullptr || t.dims.empty()) return;  // scalar or unknown shape
    const std::int64_t have = ElementCount(t.dims);
    const std::int64_t want = ElementCount(spec->shape);
    if (have < 0 || want < 0) return;
    if (have == want) {
      if (!std::equal(t.dims.begin(), t.dims.end(), spec->shape.begin(), spec->shape.end())) {
        notes_->Add(FitNoteKind::kStoredReshaped, name, 0);
      }
      return;
    }
    if (++fit_->shape_mismatches == 1) {
      *first_conflict_ = absl::StrCat("initializer \"", Abbreviate(std::string(name), 80),
                                      "\" has ", have, " elements, the manifest's ", want);
    }
  }

  const Graph& graph_;
  const Manifest& manifest_;
  const Rules& rules_;
  const OpTraits& ops_;
  const RootBinding& binding_;
  const TensorEvidence& tensors_;
  DerivedNames derived_names_;
  ManifestFit* fit_;
  ManifestFit* outside_;
  NoteTally* notes_;
  NoteTally* outside_notes_;
  std::vector<bool>* touched_;
  std::string* first_unknown_;
  std::string* first_conflict_;
};

// Parameter-named initializers: each agrees with the manifest (its
// parameter or buffer, of the same size; a tensor derived from one; a
// constant a custom module's forward made), contradicts it (another size;
// a name a library module does not have), or is unknown (TensorCheck).
void CheckTensors(const Graph& graph, const Manifest& manifest, const Rules& rules,
                  const OpTraits& ops, const RootBinding& binding, const TensorEvidence& tensors,
                  ManifestFit* fit, ManifestFit* outside, NoteTally* notes, NoteTally* outside_notes,
                  std::vector<bool>* touched, std::string* first_unknown,
                  std::string* first_conflict) {
  TensorCheck check(graph, manifest, rules, ops, binding, tensors, fit, outside, notes,
                    outside_notes, touched, first_unknown, first_conflict);
  for (const TensorInfo& t : graph.initializers()) check.Check(t);
}

}  // namespace

// Long (about 115 lines): the counting steps are helpers (CheckScopes,
// CheckTensors, UnusedTrailingItems); what stays is the verdict, whose
// thresholds and one-line evidence depend on all the counts at once and
// read best in one place.
ManifestFit AssessManifestFit(const MappingContext& context, const std::vector<ScopeSample>& scopes,
                              absl::Span<const ModuleId> node_modules, const RootBinding& binding) {
  const Graph& graph = context.graph;
  const Manifest& manifest = context.manifest;
  const Rules& rules = context.rules;
  const OpTraits& ops = context.ops;
  const TensorEvidence& tensors = context.tensors;
  ManifestFit fit;
  std::vector<bool> touched(manifest.size(), false);
  std::string first_scope;
  NoteTally notes;
  // Names outside the binding's wrapper: noted while they are the smaller
  // part (a task head), counted as unresolved otherwise (a wrapper another
  // model's manifest made up from one stray scope).
  ManifestFit outside;
  NoteTally outside_notes;
  CheckScopes(scopes, manifest, binding, &fit, &outside, &notes, &outside_notes, &touched,
              &first_scope);
  std::string first_unknown;
  std::string first_conflict;
  CheckTensors(graph, manifest, rules, ops, binding, tensors, &fit, &outside, &notes,
               &outside_notes, &touched, &first_unknown, &first_conflict);
  std::string first_weight;
  CheckLibraryTensors(graph, node_modules, manifest, rules, ops, tensors, &fit, &first_weight);
  const OpConflicts op_conflicts = CheckSignatureOps(graph, node_modules, manifest, rules);
  const FoldConflicts folds = CheckFolds(graph, node_modules, manifest, rules, ops);
  // Only scopes reach every item of a repeated container: parameter names
  // alone may not (a fresh model's identical tensors share one name).
  ModuleId container = kNoModule;
  std::size_t container_items = 0;
  if (fit.resolved_nodes >= kMinEvidence) {
    fit.unused_items =
        UnusedTrailingItems(manifest, touched, &container, &container_items, &notes);
  }

  if (outside.scoped_nodes + outside.named_tensors > fit.scoped_nodes + fit.named_tensors) {
    fit.scoped_nodes += outside.scoped_nodes;
    fit.distinct_scopes += outside.distinct_scopes;
    fit.named_tensors += outside.named_tensors;
  } else {
    notes.Merge(outside_notes);
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
       share_below(fit.matched_tensors, fit.named_tensors, kMinShare)) ||
      (fit.named_tensors >= kFewTensors &&
       share_below(fit.matched_tensors, fit.named_tensors, kMinAgreement))) {
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
  } else if (fit.unnamed_weights >= kFewTensors &&
             fit.weight_size_mismatches * kWeightMismatchShare > fit.unnamed_weights) {
    absl::StrAppend(&fit.evidence, ", but ", fit.weight_size_mismatches, " of ",
                    fit.unnamed_weights, " unnamed weights have another size (", first_weight,
                    ")");
  } else if (op_conflicts.modules >= kMinOpConflictModules &&
             op_conflicts.unexplained * kOpConflictShare > op_conflicts.checked) {
    absl::StrAppend(&fit.evidence, ", but the nodes of ", op_conflicts.modules,
                    " modules are of a kind their forward does not run (", op_conflicts.first, ")");
  } else if (folds.conflicts >= kMinFoldConflicts && folds.conflicts * 2 > folds.folds) {
    absl::StrAppend(&fit.evidence, ", but ", folds.conflicts, " of ", folds.folds,
                    " folds in the graph are of modules no exporter folds (", folds.first, ")");
  } else if (fit.unused_items > 0) {
    const ModuleInfo& info = manifest.module(container);
    absl::StrAppend(&fit.evidence, ", but \"", Abbreviate(info.path, 80), "\" has ",
                    container_items, " items in the manifest and the graph uses ",
                    container_items - fit.unused_items);
  } else {
    fit.fits = true;
    fit.notes = notes.Notes();
    if (!fit.notes.empty()) {
      absl::StrAppend(&fit.evidence, "; notes: ");
      for (std::size_t i = 0; i < fit.notes.size(); ++i) {
        absl::StrAppend(&fit.evidence, i == 0 ? "" : "; ", fit.notes[i].text);
      }
    }
  }
  return fit;
}

}  // namespace internal

absl::string_view FitNoteKindName(FitNoteKind kind) {
  constexpr absl::string_view kNames[kFitNoteKindCount] = {
      "reused_call", "folded_by_exporter", "stored_reshaped", "created_in_forward",
      "outside_manifest_root"};
  const auto index = static_cast<std::size_t>(kind);
  return index < kFitNoteKindCount ? kNames[index] : "invalid";
}

absl::string_view ManifestFit::verdict() const {
  if (!checked) return "not checked";
  if (!fits) return "misfit";
  return notes.empty() ? "fits" : "fits, with notes";
}

}  // namespace semmap
