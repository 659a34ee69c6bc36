// CompareNames and CheckSameModel of reference_transfer.h: is the reference
// the export the processed file came from?
#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"

#include "base/text.h"
#include "manifest/rule_queries.h"
#include "mapping/strategies/reference_transfer.h"

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

}  // namespace

// About 65 lines: the names of both graphs' initializers compared both ways,
// with the exclusions each direction needs kept next to the comparison.
ReferenceEvidence CompareNames(const Graph& processed, const Graph& reference,
                               const Rules& rules) {
  ReferenceEvidence e;
  absl::flat_hash_map<absl::string_view, const TensorInfo*> r_tensors;
  for (const TensorInfo& t : reference.initializers()) r_tensors.try_emplace(t.name, &t);
  if (r_tensors.empty()) {
    // Nothing to weigh: graphs built without weights. Their interface
    // names are kept by every tool.
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
  absl::flat_hash_set<absl::string_view> r_computed;
  for (const Node& n : reference.nodes()) {
    for (absl::string_view o : n.outputs) r_computed.insert(o);
  }
  auto folded = [&r_computed](absl::string_view name) {
    if (r_computed.contains(name)) return true;
    std::size_t pos = name.size();
    for (int tries = 0; tries < kMaxFoldedSuffixes; ++tries) {
      pos = name.rfind('_', pos == 0 ? 0 : pos - 1);
      if (pos == absl::string_view::npos || pos == 0) return false;
      if (r_computed.contains(name.substr(0, pos))) return true;
    }
    return false;
  };
  absl::flat_hash_set<absl::string_view> found, seen, folded_values;
  for (const TensorInfo& t : processed.initializers()) {
    if (!seen.insert(t.name).second) continue;
    auto it = r_tensors.find(t.name);
    if (it == r_tensors.end() && folded(t.name)) {
      folded_values.insert(t.name);
      continue;
    }
    ++e.processed_names;
    if (it != r_tensors.end()) {
      ++e.known;
      found.insert(it->first);
      absl::Span<const std::int64_t> r_dims = it->second->dims;
      // The same elements in another shape are the same tensor: an
      // optimizer folded a Reshape or Transpose into it and kept its name
      // (ONNX Runtime: a [1,1,1,C] view stored as [1,C,1,1]).
      if (!t.dims.empty() && !r_dims.empty() && t.dims != r_dims &&
          ElementCount(t.dims) != ElementCount(r_dims)) {
        if (e.shape_mismatches++ == 0) {
          e.first_mismatch =
              absl::StrCat(Abbreviate(t.name, 80), " ", Dims(t.dims), " vs ", Dims(r_dims));
        }
      }
      continue;
    }
    it = r_tensors.find(internal::RuleQueries(rules).stripValueSuffixes(t.name));
    if (it != r_tensors.end()) {
      ++e.known;
      found.insert(it->first);
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
  if (faults.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "reference graph is not the export this model came from: ", absl::StrJoin(faults, "; ")));
}

}  // namespace internal
}  // namespace semmap
