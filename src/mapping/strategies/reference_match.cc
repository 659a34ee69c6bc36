// Pairing the nodes of a processed graph with those of its reference
// export (reference_match.h).
#include "mapping/strategies/reference_match.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/core/graph_colours.h"
#include "mapping/core/op_traits.h"
#include "mapping/steps/check_reference.h"
#include "mapping/strategies/fused_nodes.h"

namespace semmap {
namespace internal {
namespace {

// Stands for any value a plain Constant node produces: tools reorder,
// rename and merge constants, and their payloads are not loaded.
constexpr char kConstToken[] = "\x01";
// Underscores tried from the end of a name when looking for the R node
// name it extends ("<node>_quant_scales_mul").
constexpr int kMaxDerivedSuffixes = 8;
// Unclaimed candidates of one signature compared by colour.
constexpr std::size_t kMaxTieCandidates = 64;

// Nodes computing a constant: no inputs (Constant), or only inputs computed
// by such nodes (ConstantOfShape of a Constant), in the main graph. Initializers do not count:
// their names are kept by every tool and anchor the numbering.
std::vector<char> ConstantNodes(const Graph& g) {
  std::vector<char> constant(g.size(), 0);
  // Main-graph nodes are topologically ordered; a second sweep settles the
  // rest.
  for (int sweep = 0; sweep < 2; ++sweep) {
    for (NodeId i = 0; i < static_cast<NodeId>(g.size()); ++i) {
      const Node& n = g.node(i);
      if (constant[i] || n.subgraph != 0) continue;
      bool all = true;
      for (absl::string_view in : n.inputs) {
        if (in.empty()) continue;
        const NodeId q = g.producer(in, 0);
        if (q == kNoNode || !constant[q]) {
          all = false;
          break;
        }
      }
      constant[i] = all;
    }
  }
  return constant;
}

bool IsCommutative(const Node& n) {
  if (!n.domain.empty()) return false;
  static const auto* const kOps = new absl::flat_hash_set<absl::string_view>(
      {"Add", "Mul", "Sum", "Max", "Min", "Mean", "And", "Or", "Xor", "Equal", "BitwiseAnd",
       "BitwiseOr", "BitwiseXor"});
  return kOps->contains(n.op_type);
}

// op type, domain and the input tokens, as one hash key.
std::string SignatureKey(const Node& n, std::vector<absl::string_view>* tokens) {
  if (IsCommutative(n)) std::sort(tokens->begin(), tokens->end());
  std::string key = absl::StrCat(n.op_type, "\0", n.domain);
  key.push_back('\0');
  for (absl::string_view t : *tokens) {
    key.push_back('\0');
    key.append(t.data(), t.size());
  }
  return key;
}

// R nodes of one structural signature.
struct Candidates {
  std::vector<NodeId> nodes;  // R node order
  std::size_t next = 0;       // nodes before it are claimed
};

class Matcher {
 public:
  Matcher(const Graph& p, const Graph& r, const Rules& rules, const MatchLimits& limits)
      : p_(p),
        r_(r),
        rules_(rules),
        limits_(limits),
        out_(p.size()),
        r_claimed_(r.size(), 0),
        span_budget_(SpanBudget(r, limits)),
        p_constant_(ConstantNodes(p)),
        r_constant_(ConstantNodes(r)) {}

  static std::size_t SpanBudget(const Graph& r, const MatchLimits& limits) {
    std::size_t items = r.size();
    for (const Node& n : r.nodes()) items += n.inputs.size();
    return kSpanWorkFloor + limits.span_work_per_reference_item * items;
  }

  std::vector<NodeMatch> Run() {
    IndexReference();
    SeedValues();
    ColourBoth();
    MatchByName();
    MatchStructure();
    for (NodeId p = 0; p < static_cast<NodeId>(p_.size()); ++p) {
      if (out_[p].rule == MatchRule::kNone) MatchSpan(p);
      if (out_[p].rule == MatchRule::kNone) MatchDerivedName(p);
    }
    return std::move(out_);
  }

 private:
  void IndexReference() {
    absl::flat_hash_map<absl::string_view, int> name_count;
    for (const Node& n : r_.nodes()) {
      if (!n.name.empty()) ++name_count[n.name];
    }
    for (NodeId r = 0; r < static_cast<NodeId>(r_.size()); ++r) {
      const Node& n = r_.node(r);
      if (!n.name.empty() && name_count[n.name] == 1) r_by_name_.emplace(n.name, r);
      if (n.subgraph != 0) continue;
      for (absl::string_view o : n.outputs) {
        if (!o.empty()) r_values_.insert(o);
      }
    }
    for (const TensorInfo& t : r_.initializers()) {
      if (t.subgraph == 0) {
        r_values_.insert(t.name);
        r_initializers_.emplace(t.name, &t);
      }
    }
    for (absl::string_view in : r_.inputs()) r_values_.insert(in);
    // Structural signatures of R's main-graph nodes that read something
    // other than constants.
    std::vector<absl::string_view> tokens;
    for (NodeId r = 0; r < static_cast<NodeId>(r_.size()); ++r) {
      const Node& n = r_.node(r);
      if (n.subgraph != 0) continue;
      tokens.clear();
      bool anchored = false;
      for (absl::string_view in : n.inputs) {
        tokens.push_back(ReferenceToken(in));
        anchored |= !in.empty() && tokens.back() != kConstToken;
      }
      if (!anchored) continue;
      r_signatures_[SignatureKey(n, &tokens)].nodes.push_back(r);
    }
  }

  // An R value as a signature token: constants are interchangeable.
  absl::string_view ReferenceToken(absl::string_view value) const {
    if (value.empty()) return value;
    const NodeId producer = r_.producer(value, 0);
    if (producer != kNoNode && r_constant_[producer]) return kConstToken;
    return value;
  }

  // P values named like R values are those values; so are initializers
  // renamed with a rule suffix that keep their shape ("<w>_quantized"), and
  // graph inputs and initializers whose name holds an R one's inside it
  // (a prefixing tool's "m0/input_ids", a quantizer's "q_output_<w>_1" of
  // the same shape): the anchors the structural numbering starts from.
  void SeedValues() {
    auto seed = [this](absl::string_view v) {
      if (!v.empty() && r_values_.contains(v)) value_map_.try_emplace(v, v);
    };
    for (const Node& n : p_.nodes()) {
      if (n.subgraph != 0) continue;
      for (absl::string_view v : n.inputs) seed(v);
      for (absl::string_view v : n.outputs) seed(v);
    }
    const auto long_enough = [](absl::string_view part) { return part.size() >= 3; };
    for (absl::string_view v : p_.inputs()) {
      seed(v);
      if (v.empty() || value_map_.contains(v)) continue;
      const absl::string_view embedded =
          FindEmbeddedName(v, long_enough, [&](absl::string_view part) {
            return std::find(r_.inputs().begin(), r_.inputs().end(), part) != r_.inputs().end();
          });
      if (!embedded.empty()) value_map_.try_emplace(v, embedded);
    }
    for (const TensorInfo& t : p_.initializers()) {
      if (t.subgraph != 0) continue;
      if (r_values_.contains(t.name)) {
        value_map_.try_emplace(t.name, t.name);
        continue;
      }
      const auto same_shape = [&](absl::string_view r_name) {
        auto it = r_initializers_.find(r_name);
        return it != r_initializers_.end() && !t.dims.empty() && t.dims == it->second->dims;
      };
      const absl::string_view stripped = internal::RuleQueries(rules_).StripValueSuffixes(t.name);
      if (same_shape(stripped)) {
        value_map_.try_emplace(t.name, r_initializers_.find(stripped)->first);
        continue;
      }
      const absl::string_view embedded = FindEmbeddedName(t.name, long_enough, same_shape);
      if (!embedded.empty()) value_map_.try_emplace(t.name, r_initializers_.find(embedded)->first);
    }
  }

  // Colours of both graphs, to break ties between equal signatures: values
  // without a producer count by the R name they carry.
  void ColourBoth() {
    const absl::Hash<absl::string_view> hash;
    auto named = [&hash](absl::string_view v) -> std::uint64_t { return hash(v) | 1; };
    ColourInput r{&r_, [&](absl::string_view v) -> std::uint64_t {
                    return r_values_.contains(v) ? named(v) : 0;
                  }, &r_constant_};
    ColourInput p{&p_, [&](absl::string_view v) -> std::uint64_t {
                    auto it = value_map_.find(v);
                    return it == value_map_.end() ? 0 : named(it->second);
                  }, &p_constant_};
    ColourGraphs(p, r, &p_colours_, &r_colours_);
  }

  // The R node an equal signature pairs p with: the first unclaimed one
  // whose neighbourhood (colour) looks like p's, far before near, else the
  // first unclaimed. *alike: the far colours agree.
  NodeId Choose(NodeId p, Candidates& c, bool* alike) {
    while (c.next < c.nodes.size() && r_claimed_[c.nodes[c.next]]) ++c.next;
    *alike = false;
    if (c.next == c.nodes.size()) return kNoNode;
    NodeId near = kNoNode;
    const std::size_t end = std::min(c.nodes.size(), c.next + kMaxTieCandidates);
    for (std::size_t k = c.next; k < end; ++k) {
      const NodeId r = c.nodes[k];
      if (r_claimed_[r]) continue;
      if (r_colours_.far[r] == p_colours_.far[p]) {
        *alike = true;
        return r;
      }
      if (near == kNoNode && r_colours_.near[r] == p_colours_.near[p]) near = r;
    }
    return near != kNoNode ? near : c.nodes[c.next];
  }

  // Records an exact match: P's outputs are R's outputs, and the constant
  // computations feeding p (same op types, same positions) are those
  // feeding r.
  void Pair(NodeId p, NodeId r, MatchRule rule, bool ambiguous) {
    std::vector<std::pair<NodeId, NodeId>> todo = {{p, r}};
    while (!todo.empty()) {
      const auto [pi, ri] = todo.back();
      todo.pop_back();
      out_[pi].rule = pi == p ? rule : MatchRule::kConstantOf;
      out_[pi].reference_nodes.assign(1, ri);
      out_[pi].ambiguous = pi == p && ambiguous;
      r_claimed_[ri] = 1;
      const Node& pn = p_.node(pi);
      const Node& rn = r_.node(ri);
      if (pn.subgraph != 0 || rn.subgraph != 0) continue;
      for (std::size_t i = 0; i < std::min(pn.outputs.size(), rn.outputs.size()); ++i) {
        if (!pn.outputs[i].empty() && !rn.outputs[i].empty()) {
          value_map_.try_emplace(pn.outputs[i], rn.outputs[i]);
        }
      }
      for (std::size_t i = 0; i < std::min(pn.inputs.size(), rn.inputs.size()); ++i) {
        if (pn.inputs[i].empty() || rn.inputs[i].empty()) continue;
        const NodeId pc = p_.producer(pn.inputs[i], 0);
        const NodeId rc = r_.producer(rn.inputs[i], 0);
        if (pc == kNoNode || rc == kNoNode || out_[pc].rule != MatchRule::kNone ||
            r_claimed_[rc] || !p_constant_[pc] || !r_constant_[rc] ||
            p_.node(pc).op_type != r_.node(rc).op_type) {
          continue;
        }
        r_claimed_[rc] = 1;
        out_[pc].rule = MatchRule::kConstantOf;  // claimed before it is popped
        todo.emplace_back(pc, rc);
      }
    }
  }

  void MatchByName() {
    for (NodeId p = 0; p < static_cast<NodeId>(p_.size()); ++p) {
      const Node& n = p_.node(p);
      if (n.name.empty()) continue;
      auto it = r_by_name_.find(n.name);
      if (it == r_by_name_.end()) continue;
      const Node& r = r_.node(it->second);
      if (r.op_type == n.op_type && r.domain == n.domain && !r_claimed_[it->second]) {
        Pair(p, it->second, MatchRule::kSameName, false);
      }
    }
  }

  // P's input as a signature token; false when it is not matched yet.
  bool ProcessedToken(absl::string_view value, absl::string_view* token) const {
    if (value.empty()) {
      *token = value;
      return true;
    }
    const NodeId producer = p_.producer(value, 0);
    if (producer != kNoNode && p_constant_[producer]) {
      *token = kConstToken;
      return true;
    }
    auto it = value_map_.find(value);
    if (it != value_map_.end()) {
      *token = ReferenceToken(it->second);
      return true;
    }
    // A constant folded into an initializer under a new name.
    if (producer == kNoNode && p_.initializer(value) != nullptr) {
      *token = kConstToken;
      return true;
    }
    return false;
  }

  // Value numbering from the graph inputs and initializers: a P node whose
  // op type and (matched) inputs, in order, are an R node's is that node.
  // Equal signatures pair in node order.
  void MatchStructure() {
    std::vector<absl::string_view> tokens;
    for (int pass = 0; pass < limits_.max_structure_passes; ++pass) {
      bool changed = false;
      for (NodeId p = 0; p < static_cast<NodeId>(p_.size()); ++p) {
        const Node& n = p_.node(p);
        if (out_[p].rule != MatchRule::kNone || n.subgraph != 0) continue;
        tokens.clear();
        bool ready = true, anchored = false;
        for (absl::string_view in : n.inputs) {
          absl::string_view t;
          if (!ProcessedToken(in, &t)) {
            ready = false;
            break;
          }
          tokens.push_back(t);
          anchored |= !in.empty() && t != kConstToken;
        }
        if (!ready || !anchored) continue;
        auto it = r_signatures_.find(SignatureKey(n, &tokens));
        if (it == r_signatures_.end()) continue;
        bool alike = false;
        const NodeId r = Choose(p, it->second, &alike);
        if (r == kNoNode) continue;
        Pair(p, r, MatchRule::kStructure, it->second.nodes.size() > 1 && !alike);
        changed = true;
      }
      if (!changed) break;
    }
  }

  // A node writing values of R stands for the R nodes between its matched
  // inputs and those outputs (a fused Attention, SkipLayerNormalization...);
  // reading none, for the producers of those outputs.
  void MatchSpan(NodeId p) {
    const Node& n = p_.node(p);
    if (n.subgraph != 0) return;
    std::vector<NodeId> producers;
    for (absl::string_view o : n.outputs) {
      auto it = value_map_.find(o);
      if (it == value_map_.end()) continue;
      const NodeId r = r_.producer(it->second, 0);
      if (r != kNoNode) producers.push_back(r);
    }
    if (producers.empty()) return;
    absl::flat_hash_set<absl::string_view> ins;
    for (absl::string_view in : n.inputs) {
      auto it = value_map_.find(in);
      if (it != value_map_.end() && !r_initializers_.contains(it->second)) ins.insert(it->second);
    }
    std::vector<NodeId> span;
    if (!ins.empty()) span = Between(ins, producers);
    if (span.empty()) span = producers;
    std::sort(span.begin(), span.end());
    span.erase(std::unique(span.begin(), span.end()), span.end());
    out_[p].rule = MatchRule::kSpan;
    out_[p].reference_nodes = std::move(span);
  }

  // R nodes on paths from `ins` to the outputs of `producers`: reachable
  // backwards from the producers without crossing `ins`, and forwards from
  // the consumers of `ins`. Empty when the walk exceeds the limit of one
  // span or what is left of the match's budget (span_budget_, which the
  // walk spends).
  std::vector<NodeId> Between(const absl::flat_hash_set<absl::string_view>& ins,
                              const std::vector<NodeId>& producers) {
    std::size_t work = 0;  // nodes and edges visited
    struct Spend {
      std::size_t* budget;
      const std::size_t* work;
      ~Spend() { *budget -= std::min(*budget, *work); }
    } spend{&span_budget_, &work};
    const std::size_t max_nodes = std::min(limits_.max_span_nodes, span_budget_);
    absl::flat_hash_set<NodeId> back;
    std::vector<NodeId> stack = producers;
    while (!stack.empty()) {
      const NodeId r = stack.back();
      stack.pop_back();
      ++work;
      if (!back.insert(r).second) continue;
      if (back.size() > max_nodes) return {};
      for (absl::string_view in : r_.node(r).inputs) {
        ++work;
        if (in.empty() || ins.contains(in)) continue;
        const NodeId q = r_.producer(in, 0);
        if (q != kNoNode) stack.push_back(q);
      }
    }
    // Consumer lists can be long (a mask read by every layer): the forward
    // walk is bounded by edges visited, not nodes.
    absl::flat_hash_set<NodeId> forward;
    std::size_t edges = 0;
    const std::size_t max_edges =
        std::min(4 * limits_.max_span_nodes, span_budget_ - std::min(span_budget_, work));
    auto push_consumers = [&](absl::string_view v) {
      for (NodeId c : r_.consumers(v, 0)) {
        ++work;
        if (++edges > max_edges) return false;
        if (back.contains(c)) stack.push_back(c);
      }
      return true;
    };
    for (absl::string_view v : ins) {
      if (!push_consumers(v)) return {};
    }
    while (!stack.empty()) {
      const NodeId r = stack.back();
      stack.pop_back();
      if (!forward.insert(r).second) continue;
      for (absl::string_view o : r_.node(r).outputs) {
        if (!o.empty() && !push_consumers(o)) return {};
      }
    }
    return std::vector<NodeId>(forward.begin(), forward.end());
  }

  // "<R node name>_<suffix>" (the quantizer's "<node>_quant"), or an R node
  // name on a node of another op type. A name extending an R value name
  // ("<value>_QuantizeLinear") says where the value comes from, not where
  // the node belongs: no match.
  void MatchDerivedName(NodeId p) {
    absl::string_view name = p_.node(p).name;
    if (name.empty()) return;
    auto same = r_by_name_.find(name);
    if (same != r_by_name_.end()) {
      out_[p].rule = MatchRule::kDerivedName;
      out_[p].reference_nodes.assign(1, same->second);
      return;
    }
    NodeId longest = kNoNode;
    std::size_t pos = name.size();
    for (int tries = 0; tries < kMaxDerivedSuffixes; ++tries) {
      pos = name.rfind('_', pos == 0 ? 0 : pos - 1);
      if (pos == std::string::npos || pos == 0) break;
      const absl::string_view prefix = absl::string_view(name).substr(0, pos);
      if (r_values_.contains(prefix)) return;
      if (longest == kNoNode) {
        auto it = r_by_name_.find(prefix);
        if (it != r_by_name_.end()) longest = it->second;
      }
    }
    if (longest == kNoNode) return;
    out_[p].rule = MatchRule::kDerivedName;
    out_[p].reference_nodes.assign(1, longest);
  }

  const Graph& p_;
  const Graph& r_;
  const Rules& rules_;
  const MatchLimits& limits_;
  std::vector<NodeMatch> out_;
  std::vector<char> r_claimed_;
  std::size_t span_budget_;  // span work left (MatchLimits::span_work_per_reference_item)
  const std::vector<char> p_constant_;  // ConstantNodes(p_)
  const std::vector<char> r_constant_;  // ConstantNodes(r_)
  absl::flat_hash_map<absl::string_view, NodeId> r_by_name_;  // unique names
  absl::flat_hash_set<absl::string_view> r_values_;           // main graph
  absl::flat_hash_map<absl::string_view, const TensorInfo*> r_initializers_;
  absl::flat_hash_map<std::string, Candidates> r_signatures_;
  GraphColours p_colours_, r_colours_;
  // P main-graph value -> R main-graph value it carries.
  absl::flat_hash_map<absl::string_view, absl::string_view> value_map_;
};

}  // namespace

std::vector<NodeMatch> MatchToReference(const Graph& processed, const Graph& reference,
                                        const Rules& rules, const MatchLimits& limits) {
  return Matcher(processed, reference, rules, limits).Run();
}

}  // namespace internal
}  // namespace semmap
