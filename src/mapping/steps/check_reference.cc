#include "mapping/steps/check_reference.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/types/span.h"

#include "base/status_macros.h"
#include "base/text.h"
#include "graph/exporter_metadata.h"
#include "manifest/rule_queries.h"
#include "semmap/reference_check.h"
#include "semmap/scope_path.h"

namespace semmap {
namespace internal {
namespace {

// Each tool renames at most a small share of the weights (quantization adds
// suffixes, which are stripped; fusion replaces a few per layer): half of
// the names on either side is far below what a processed copy keeps and far
// above what two different models share.
constexpr double kMinShared = 0.5;
// Shared names whose sizes differ, per shared name.
constexpr double kMaxShapeMismatch = 0.05;
// Graphs sharing no initializer name are the same model when nine in ten
// of either graph's weights (two or more dimensions, at least this many)
// have one of the same dims in the other: a tool renamed them all. Another
// depth or width of the model has other counts or other dims.
constexpr std::size_t kMinWeightsByShape = 4;
constexpr std::size_t kShapeShareNumerator = 9, kShapeShareDenominator = 10;
// Underscores tried from the end of a folded constant's name.
constexpr int kMaxFoldedSuffixes = 4;


std::string Dims(absl::Span<const std::int64_t> dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// Values a folded initializer computes are looked for this many nodes
// downstream of the reference initializer, and at most this many nodes
// visited: the search stays linear in the graph.
constexpr int kMaxFoldedDepth = 4;
constexpr int kMaxFoldedVisits = 16;

// Whether the model holds, as a folded constant (`folded_values`), a value
// the reference computes from `tensor` within a few nodes.
bool FoldedAway(const Graph& reference, const TensorInfo& tensor,
                const absl::flat_hash_set<absl::string_view>& folded_values) {
  if (folded_values.empty()) return false;
  std::vector<std::pair<absl::string_view, int>> frontier = {{tensor.name, 0}};
  int visits = 0;
  while (!frontier.empty() && visits < kMaxFoldedVisits) {
    const auto [value, depth] = frontier.back();
    frontier.pop_back();
    for (NodeId c : reference.consumers(value, tensor.subgraph)) {
      if (++visits > kMaxFoldedVisits) break;
      for (absl::string_view out : reference.node(c).outputs) {
        if (folded_values.contains(out)) return true;
        if (depth + 1 < kMaxFoldedDepth && !out.empty()) frontier.emplace_back(out, depth + 1);
      }
    }
  }
  return false;
}

// Per op type, how many leading inputs of a quantizer's op are its data (1;
// 2 for a blockwise op's activation and packed weight), or 0 for other ops:
// the rules' patterns are matched once per op type.
class QuantizerInputs {
 public:
  explicit QuantizerInputs(const internal::RuleQueries& rules) : rules_(rules) {}
  std::size_t DataInputs(absl::string_view op_type) {
    auto [it, inserted] = data_.try_emplace(op_type, 0);
    if (inserted && rules_.Is(OpKind::kQuantizer, op_type)) {
      it->second = rules_.Is(OpKind::kBlockwiseWeight, op_type) ? 2 : 1;
    }
    return it->second;
  }

 private:
  const internal::RuleQueries& rules_;
  absl::flat_hash_map<absl::string_view, std::size_t> data_;
};

// Whether initializer `t` is read only as a quantizer op's parameter (a
// scale, a zero point: an input after the data a QuantizeLinear or
// DequantizeLinear reads first, after the packed weight of a blockwise op),
// never as data an op computes on.
bool QuantizerParameter(const Graph& g, QuantizerInputs* quantizers, const TensorInfo& t) {
  const absl::Span<const NodeId> readers = g.consumers(t.name, t.subgraph);
  if (readers.empty()) return false;
  for (NodeId c : readers) {
    const Node& n = g.node(c);
    const std::size_t data = quantizers->DataInputs(n.op_type);
    if (data == 0) return false;
    for (std::size_t i = 0; i < data && i < n.inputs.size(); ++i) {
      if (n.inputs[i] == t.name) return false;
    }
  }
  return true;
}

// The weights of two or more dimensions of `g`, by their dims.
absl::flat_hash_map<std::vector<std::int64_t>, std::size_t> WeightShapes(const Graph& g,
                                                                        std::size_t* weights) {
  absl::flat_hash_map<std::vector<std::int64_t>, std::size_t> out;
  for (const TensorInfo& t : g.initializers()) {
    if (t.dims.size() < 2) continue;
    ++*weights;
    ++out[std::vector<std::int64_t>(t.dims.begin(), t.dims.end())];
  }
  return out;
}

// Graphs sharing no initializer name: how many weights of each have one of
// the same dims in the other, as multisets.
void PairWeightShapes(const Graph& processed, const Graph& reference, ReferenceEvidence* e) {
  const auto p = WeightShapes(processed, &e->processed_weights);
  const auto r = WeightShapes(reference, &e->reference_weights);
  for (const auto& [dims, count] : r) {
    const auto it = p.find(dims);
    const std::size_t paired = it == p.end() ? 0 : std::min(count, it->second);
    e->reference_weights_paired += paired;
    e->processed_weights_paired += paired;
  }
}

using TensorsByName = absl::flat_hash_map<absl::string_view, const TensorInfo*>;

// Graphs built without weights, nothing to weigh: their interface names,
// which every tool keeps.
ReferenceEvidence CompareInterfaceNames(const Graph& processed, const Graph& reference) {
  ReferenceEvidence e;
  e.by_initializers = false;
  absl::flat_hash_set<absl::string_view> r_names, p_names;
  for (absl::string_view n : reference.inputs()) r_names.insert(n);
  for (absl::string_view n : reference.outputs()) r_names.insert(n);
  for (absl::string_view n : processed.inputs()) p_names.insert(n);
  for (absl::string_view n : processed.outputs()) p_names.insert(n);
  e.reference_names = r_names.size();
  e.processed_names = p_names.size();
  for (absl::string_view n : r_names) e.found += p_names.contains(n);
  for (absl::string_view n : p_names) e.known += r_names.contains(n);
  return e;
}

// Values R computes: constant folding (onnxslim) turns them into
// initializers named after them ("/m/Constant_output_0", "..._axes"),
// which say nothing either way.
class ComputedValues {
 public:
  explicit ComputedValues(const Graph& reference) : reference_(reference) {}

  // Whether `name` is such a value's, as it is or with a few suffixes.
  // The values are indexed when first asked: a copy that keeps its
  // initializers' names never asks.
  bool Folded(absl::string_view name) {
    if (!indexed_) {
      indexed_ = true;
      for (const Node& n : reference_.nodes()) {
        for (absl::string_view o : n.outputs) computed_.insert(o);
      }
    }
    if (computed_.contains(name)) return true;
    std::size_t pos = name.size();
    for (int tries = 0; tries < kMaxFoldedSuffixes; ++tries) {
      pos = name.rfind('_', pos == 0 ? 0 : pos - 1);
      if (pos == absl::string_view::npos || pos == 0) return false;
      if (computed_.contains(name.substr(0, pos))) return true;
    }
    return false;
  }

 private:
  const Graph& reference_;
  bool indexed_ = false;
  absl::flat_hash_set<absl::string_view> computed_;
};

// Initializer `t` and the reference's `r` of its name: another shape of
// another size is a mismatch. The same elements in another shape are the
// same tensor: an optimizer folded a Reshape or Transpose into it and kept
// its name (ONNX Runtime: a [1,1,1,C] view stored as [1,C,1,1]).
void CompareSizes(const TensorInfo& t, const TensorInfo& r, ReferenceEvidence* e) {
  absl::Span<const std::int64_t> r_dims = r.dims;
  if (!t.dims.empty() && !r_dims.empty() && t.dims != r_dims &&
      ElementCount(t.dims) != ElementCount(r_dims)) {
    if (e->shape_mismatches++ == 0) {
      e->first_mismatch =
          absl::StrCat(Abbreviate(t.name, 80), " ", Dims(t.dims), " vs ", Dims(r_dims));
    }
  }
}

// The reference tensor initializer `t` is under a tool's name: without the
// rules' value suffixes, or the reference's name inside the tool's
// ("q_output_<name>_1", a prefix), the same tensor when it holds as many
// elements (a quantized copy keeps them; a scale or zero point named after
// it does not). r_tensors.end() when none.
TensorsByName::const_iterator RenamedFrom(const TensorInfo& t, const TensorsByName& r_tensors,
                                          const internal::RuleQueries& queries) {
  auto it = r_tensors.find(queries.StripValueSuffixes(t.name));
  if (it != r_tensors.end()) return it;
  const absl::string_view embedded = FindEmbeddedName(
      t.name, [](absl::string_view part) { return part.size() >= 3; },
      [&](absl::string_view part) { return r_tensors.contains(part); });
  if (!embedded.empty()) {
    const TensorInfo& r = *r_tensors.find(embedded)->second;
    if (t.dims.empty() == r.dims.empty() && ElementCount(t.dims) == ElementCount(r.dims)) {
      it = r_tensors.find(embedded);
    }
  }
  return it;
}

}  // namespace

// The names of both graphs' initializers compared both ways, in named
// steps: graphs without weights (CompareInterfaceNames), values R computes
// (ComputedValues), each shared name's sizes (CompareSizes), names a tool
// changed (RenamedFrom); the exclusions of each direction beside it.
ReferenceEvidence CompareNames(const Graph& processed, const Graph& reference,
                               const Rules& rules) {
  TensorsByName r_tensors;
  for (const TensorInfo& t : reference.initializers()) r_tensors.try_emplace(t.name, &t);
  if (r_tensors.empty()) return CompareInterfaceNames(processed, reference);
  ReferenceEvidence e;
  ComputedValues computed(reference);
  const internal::RuleQueries queries(rules);
  QuantizerInputs quantizers(queries);
  absl::flat_hash_set<absl::string_view> found, seen, folded_values;
  for (const TensorInfo& t : processed.initializers()) {
    if (!seen.insert(t.name).second) continue;
    auto it = r_tensors.find(t.name);
    if (it == r_tensors.end() && computed.Folded(t.name)) {
      folded_values.insert(t.name);
      continue;
    }
    ++e.processed_names;
    if (it != r_tensors.end()) {
      ++e.known;
      found.insert(it->first);
      CompareSizes(t, *it->second, &e);
      continue;
    }
    if (const auto renamed = RenamedFrom(t, r_tensors, queries); renamed != r_tensors.end()) {
      ++e.known;
      found.insert(renamed->first);
    } else if (QuantizerParameter(processed, &quantizers, t)) {
      // A quantizer's scale or zero point named after nothing of the
      // reference: made by the tool, evidence of neither model.
      --e.processed_names;
    }
  }
  e.reference_names = r_tensors.size();
  // A reference initializer the model lacks because a tool folded what it
  // computes into a constant named after a value of R (onnxslim folding a
  // weight standardisation into "/stem/conv1/Reshape_output_0") is not
  // missing: it lives on in that constant.
  for (const auto& [name, tensor] : r_tensors) {
    if (!found.contains(name) && FoldedAway(reference, *tensor, folded_values)) --e.reference_names;
  }
  e.found = found.size();
  if (e.found == 0 && e.known == 0) PairWeightShapes(processed, reference, &e);
  return e;
}

absl::Status CheckSameModel(const Graph& processed, const Graph& reference,
                            const Rules& rules) {
  const ReferenceEvidence e = CompareNames(processed, reference, rules);
  const char* what = e.by_initializers ? "initializers" : "graph input and output names";
  std::vector<std::string> faults;
  if (e.found < kMinShared * e.reference_names || e.reference_names == 0) {
    faults.push_back(absl::StrCat("the model has ", e.found, " of the reference's ",
                                  e.reference_names, " ", what));
  }
  if (e.known < kMinShared * e.processed_names) {
    faults.push_back(absl::StrCat("only ", e.known, " of the model's ", e.processed_names, " ",
                                  what, " come from the reference"));
  }
  if (e.shape_mismatches > kMaxShapeMismatch * std::max<std::size_t>(e.found, 1)) {
    faults.push_back(absl::StrCat(e.shape_mismatches, " shared initializers differ in shape (",
                                  e.first_mismatch, ")"));
  }
  if (e.reference_names == 0 && e.processed_names == 0) faults.clear();  // nothing to judge
  // No name shared: a tool renamed every initializer (qonnx's cleanup:
  // "Conv_0_param0"); the weights' shapes say whether they are the same.
  const auto shapes_pair = [](std::size_t paired, std::size_t all) {
    return all >= kMinWeightsByShape && paired * kShapeShareDenominator >= all * kShapeShareNumerator;
  };
  if (e.found == 0 && e.known == 0 &&
      shapes_pair(e.reference_weights_paired, e.reference_weights) &&
      shapes_pair(e.processed_weights_paired, e.processed_weights)) {
    faults.clear();
  }
  if (faults.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "reference graph is not the export this model came from: ", absl::StrJoin(faults, "; ")));
}

namespace {

// A naming scheme needs this share of a file's nodes (one in ten) to count.
constexpr std::size_t kSchemeShare = 10;
// Other exporters' files share almost no node names: under one in ten.
constexpr std::size_t kSharedNameShare = 10;
// A reference naming fewer than half as many scopes as the model lost
// names the model still has.
constexpr std::size_t kScopeRatio = 2;
// Below this many scopes named in the model, no verdict on naming; below
// this many nodes, none on pairing.
constexpr std::size_t kMinScopes = 8;
constexpr std::size_t kMinPaired = 8;
// A processed copy keeps most of its source's nodes or the values they
// write: on the corpus at least 62 % of a processed file's nodes pair
// (quantized CNNs), another exporter's graph of the model 1 % to 4 %.
constexpr std::size_t kPairedShare = 4;
// What a warning says the mapper does about it.
constexpr char kOwnKept[] =
    "answers carried over from it are kept only where the model's own are less confident";

// Nodes named by a TorchScript scope ("/a/b/Op") and by the dynamo
// exporter (a module stack in metadata, or a "node_..." name), and the
// distinct scopes they name. Tools add nodes (a quantizer's
// "/a/b/Conv_output_0_QuantizeLinear"), never scopes.
}  // namespace

GraphNaming NamingOf(const Graph& g) {
  std::size_t scoped = 0, dynamo = 0;
  absl::flat_hash_set<absl::string_view> name_scopes;  // "/a/b", views into the names
  absl::flat_hash_set<std::string> stack_scopes;       // "a.b"
  ModuleStack stack;
  for (const Node& n : g.nodes()) {
    const ScopePath path = ScopePath::Parse(n.name, /*max_segments=*/1);
    const bool scope = path.scoped() && (!path.segments().empty() || path.truncated());
    const bool metadata = ReadModuleStack(n.metadata, &stack);
    scoped += scope;
    dynamo += metadata || path.style() == NameStyle::kDynamo;
    if (scope) name_scopes.insert(n.name.substr(0, n.name.rfind('/')));
    if (metadata && !stack.deepest().empty()) stack_scopes.insert(stack.deepest());
  }
  GraphNaming out;
  out.scopes = name_scopes.size() + stack_scopes.size();
  const std::size_t floor = std::max<std::size_t>(1, g.size() / kSchemeShare);
  if (scoped >= dynamo && scoped >= floor) out.scheme = NodeNaming::kScopes;
  if (dynamo > scoped && dynamo >= floor) out.scheme = NodeNaming::kMetadata;
  return out;
}

namespace {

// Same nodes in the same order: names, op types, domains, values read and
// written, and the same initializers.
bool SameGraph(const Graph& a, const Graph& b) {
  if (a.size() != b.size() || a.initializers().size() != b.initializers().size() ||
      a.inputs() != b.inputs() || a.outputs() != b.outputs()) {
    return false;
  }
  for (NodeId i = 0; i < static_cast<NodeId>(a.size()); ++i) {
    const Node& x = a.node(i);
    const Node& y = b.node(i);
    if (x.name != y.name || x.op_type != y.op_type || x.domain != y.domain ||
        x.subgraph != y.subgraph || x.inputs != y.inputs || x.outputs != y.outputs) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.initializers().size(); ++i) {
    if (a.initializers()[i].name != b.initializers()[i].name) return false;
  }
  return true;
}

// Nodes of P named as a node of R: the whole name, or the last part of a
// scoped name with "%2F" and "%25" read back (annotate --scoped-names
// keeps the old name there).
std::size_t SharedNames(const Graph& p, const Graph& r) {
  // A copy whose tool dropped every node name shares none: R's names are
  // not indexed for it (a million of them in a large export).
  if (std::all_of(p.nodes().begin(), p.nodes().end(),
                  [](const Node& n) { return n.name.empty(); })) {
    return 0;
  }
  absl::flat_hash_set<absl::string_view> names;
  for (const Node& n : r.nodes()) {
    if (!n.name.empty()) names.insert(n.name);
  }
  std::size_t shared = 0;
  for (const Node& n : p.nodes()) {
    if (n.name.empty()) continue;
    if (names.contains(n.name)) {
      ++shared;
      continue;
    }
    const std::size_t slash = n.name.rfind('/');
    if (slash == absl::string_view::npos || n.name.front() != '/') continue;
    const absl::string_view leaf = n.name.substr(slash + 1);
    shared += names.contains(leaf.find('%') == absl::string_view::npos
                                 ? std::string(leaf)
                                 : absl::StrReplaceAll(leaf, {{"%2F", "/"}, {"%25", "%"}}));
  }
  return shared;
}

}  // namespace

absl::StatusOr<ReferenceCheck> CheckReference(const Graph& processed, const Graph& reference,
                                              const Rules& rules,
                                              const GraphNaming* reference_naming) {
  SEMMAP_RETURN_IF_ERROR(CheckSameModel(processed, reference, rules));
  ReferenceCheck c;
  c.checked = true;
  if (SameGraph(processed, reference)) {
    c.same_graph = true;
    c.warnings.push_back(
        "the reference is the model's own graph: it adds nothing and is not used (every "
        "answer is the model's own)");
    return c;
  }
  const GraphNaming p = NamingOf(processed);
  const GraphNaming r = reference_naming != nullptr ? *reference_naming : NamingOf(reference);
  c.model_naming = p.scheme;
  c.reference_naming = r.scheme;
  c.model_scopes = p.scopes;
  c.reference_scopes = r.scopes;
  c.shared_names = SharedNames(processed, reference);
  const auto describe = [](NodeNaming n) {
    return n == NodeNaming::kScopes ? "by TorchScript scopes" : "by the dynamo exporter's metadata";
  };
  if (p.scheme != NodeNaming::kNone && r.scheme != NodeNaming::kNone && p.scheme != r.scheme &&
      c.shared_names * kSharedNameShare < processed.size()) {
    c.other_exporter = true;
    c.warnings.push_back(absl::StrCat(
        "the reference names its nodes ", describe(r.scheme), ", the model ", describe(p.scheme),
        ", and ", c.shared_names, " of the model's ", processed.size(),
        " node names are the reference's: it is the other exporter's export, not the file the "
        "model was made from; ", kOwnKept));
  }
  if (p.scopes >= kMinScopes && r.scopes * kScopeRatio < p.scopes) {
    c.less_informed = true;
    c.warnings.push_back(absl::StrCat(
        "the reference's node names and metadata name ", r.scopes, " module scopes, the "
        "model's ", p.scopes, ": it looks like a processed copy of the model (names stripped), "
        "not its source (were the two files swapped?); ", kOwnKept));
  }
  return c;
}

void NotePairing(std::size_t paired, std::size_t nodes, ReferenceCheck* check) {
  check->paired_nodes = paired;
  if (nodes < kMinPaired || paired * kPairedShare >= nodes) return;
  check->few_paired = true;
  if (check->other_exporter) return;  // said already
  check->warnings.push_back(absl::StrCat(
      "only ", paired, " of the model's ", nodes, " nodes pair with nodes of the reference (a "
      "processed copy keeps most of its source's nodes or the values they write): its graph "
      "is not the one the model was made from; ", kOwnKept));
}

}  // namespace internal

absl::string_view NodeNamingName(NodeNaming naming) {
  switch (naming) {
    case NodeNaming::kScopes: return "scopes";
    case NodeNaming::kMetadata: return "metadata";
    case NodeNaming::kNone: break;
  }
  return "none";
}

}  // namespace semmap
