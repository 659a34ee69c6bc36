// Pairing the nodes of a processed graph with those of its reference
// export (reference_match.h).
#include "mapping/strategies/reference_match.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
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

// Signature tokens: an R value read (its id), or one of these. Constants
// are interchangeable: tools reorder, rename and merge them, and their
// payloads are not loaded.
constexpr ValueId kEmptyToken = -1;      // an omitted optional input ("")
constexpr ValueId kConstToken = -2;      // any value a constant computation produces
constexpr ValueId kUndefinedToken = -3;  // a name R defines nowhere: matches nothing
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
      const Node n = g.node(i);
      if (constant[i] || n.subgraph != 0) continue;
      bool all = true;
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k].empty()) continue;
        const NodeId q = g.producer(n.input_values[k]);
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

// op type, domain and the input tokens (sorted for a commutative op), as
// one hash; equal hashes are checked against the tokens (SameSignature).
std::uint64_t SignatureHash(const Node& n, bool commutative, std::vector<ValueId>* tokens) {
  if (commutative) std::sort(tokens->begin(), tokens->end());
  const absl::Hash<absl::string_view> hash;
  std::uint64_t h = MixHash(hash(n.op_type), hash(n.domain));
  h = MixHash(h, tokens->size());
  for (ValueId t : *tokens) {
    h = MixHash(h, static_cast<std::uint64_t>(static_cast<std::int64_t>(t)));
  }
  return h;
}

// R nodes of one structural signature.
struct Candidates {
  std::vector<NodeId> nodes;  // R node order
  std::size_t next = 0;       // nodes before it are claimed
};

// Values are compared by id: a P value's R counterpart is a table indexed
// by P's value ids, R's tokens are R's value ids; names are read only
// where a rule is about names (seeds, the derived-name rule).
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
        r_constant_(ConstantNodes(r)),
        p_ops_(p, rules),
        r_ops_(r, rules),
        value_map_(p.valueCount(), kNoValue) {}

  static std::size_t SpanBudget(const Graph& r, const MatchLimits& limits) {
    std::size_t items = r.size();
    for (const Node& n : r.nodes()) items += n.inputs.size();
    return kSpanWorkFloor + limits.span_work_per_reference_item * items;
  }

  std::vector<NodeMatch> Run() {
    IndexReference();
    SeedValues();
    if (limits_.colours_on_demand) {
      aligned_ = ColouredAlikeByPosition(ColourInputOf(Side::kProcessed),
                                         ColourInputOf(Side::kReference));
    } else {
      ColourBoth();
    }
    MatchByName();
    MatchStructure();
    for (NodeId p = 0; p < static_cast<NodeId>(p_.size()); ++p) {
      if (out_[p].rule == MatchRule::kNone) MatchSpan(p);
      if (out_[p].rule == MatchRule::kNone) MatchDerivedName(p);
    }
    return std::move(out_);
  }

  MatchTrace trace() const { return {aligned_, coloured_}; }

 private:
  void IndexReference() {
    // Node names are indexed only when P has some to look up.
    bool p_named = false;
    for (const Node& n : p_.nodes()) {
      if (!n.name.empty()) {
        p_named = true;
        break;
      }
    }
    if (p_named) {
      absl::flat_hash_map<absl::string_view, int> name_count;
      for (const Node& n : r_.nodes()) {
        if (!n.name.empty()) ++name_count[n.name];
      }
      for (NodeId r = 0; r < static_cast<NodeId>(r_.size()); ++r) {
        const Node n = r_.node(r);
        if (!n.name.empty() && name_count[n.name] == 1) r_by_name_.emplace(n.name, r);
      }
    }
    // Structural signatures of R's main-graph nodes that read something
    // other than constants.
    std::vector<ValueId> tokens;
    for (NodeId r = 0; r < static_cast<NodeId>(r_.size()); ++r) {
      const Node n = r_.node(r);
      if (n.subgraph != 0) continue;
      bool anchored = false;
      ReferenceTokens(n, &tokens, &anchored);
      if (!anchored) continue;
      Candidates& c = r_signatures_[SignatureHash(n, IsCommutative(r_ops_, r, n), &tokens)];
      // Two signatures of one hash: the later one is left to the other rules.
      if (!c.nodes.empty() && !SameSignature(c.nodes.front(), n, tokens)) continue;
      c.nodes.push_back(r);
    }
  }

  void ReferenceTokens(const Node& n, std::vector<ValueId>* tokens, bool* anchored) const {
    tokens->clear();
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k].empty()) {
        tokens->push_back(kEmptyToken);
        continue;
      }
      const ValueId v = n.input_values[k];
      tokens->push_back(v < 0 ? kUndefinedToken : ReferenceToken(v));
      *anchored |= tokens->back() != kConstToken;
    }
  }

  // R node r's signature is n's with `tokens` (sorted as SignatureHash
  // leaves them).
  bool SameSignature(NodeId r, const Node& n, const std::vector<ValueId>& tokens) const {
    const Node rn = r_.node(r);
    if (rn.op_type != n.op_type || rn.domain != n.domain) return false;
    bool anchored = false;
    ReferenceTokens(rn, &scratch_, &anchored);
    if (IsCommutative(r_ops_, r, rn)) std::sort(scratch_.begin(), scratch_.end());
    return scratch_ == tokens;
  }

  // An R value as a signature token: constants are interchangeable.
  ValueId ReferenceToken(ValueId value) const {
    const NodeId producer = r_.producer(value);
    if (producer != kNoNode && r_constant_[producer]) return kConstToken;
    return value;
  }

  // The R value P's value `v` (named `name`) carries, or kNoValue. A name P
  // defines nowhere carries the R value of that name.
  ValueId Mapped(ValueId v, absl::string_view name) const {
    if (v >= 0) return value_map_[static_cast<std::size_t>(v)];
    return name.empty() ? kNoValue : r_.value(name, 0);
  }

  void MapValue(ValueId p_value, ValueId r_value) {
    if (p_value < 0 || r_value < 0) return;
    ValueId& slot = value_map_[static_cast<std::size_t>(p_value)];
    if (slot == kNoValue) slot = r_value;
  }

  // P values named like R values are those values; so are initializers
  // renamed with a rule suffix that keep their shape ("<w>_quantized"), and
  // graph inputs and initializers whose name holds an R one's inside it
  // (a prefixing tool's "m0/input_ids", a quantizer's "q_output_<w>_1" of
  // the same shape): the anchors the structural numbering starts from.
  void SeedValues() {
    auto same_name = [this](ValueId v) { MapValue(v, r_.value(p_.valueName(v), 0)); };
    // What main-graph nodes write (what they read is written there, or is
    // a graph input or initializer, seeded below).
    for (const Node& n : p_.nodes()) {
      if (n.subgraph != 0) continue;
      for (ValueId v : n.output_values) {
        if (v >= 0) same_name(v);
      }
    }
    std::vector<ValueId> inputs, initializers;
    for (absl::string_view name : p_.inputs()) {
      if (!name.empty()) inputs.push_back(p_.value(name, 0));
    }
    for (const TensorInfo& t : p_.initializers()) {
      if (t.subgraph == 0) initializers.push_back(p_.value(t.name, 0));
    }
    for (ValueId v : inputs) same_name(v);
    for (ValueId v : initializers) same_name(v);
    const auto long_enough = [](absl::string_view part) { return part.size() >= 3; };
    for (ValueId v : inputs) {
      if (v < 0 || value_map_[static_cast<std::size_t>(v)] != kNoValue) continue;
      const absl::string_view embedded =
          FindEmbeddedName(p_.valueName(v), long_enough, [&](absl::string_view part) {
            return std::find(r_.inputs().begin(), r_.inputs().end(), part) != r_.inputs().end();
          });
      if (!embedded.empty()) MapValue(v, r_.value(embedded, 0));
    }
    for (const TensorInfo& t : p_.initializers()) {
      if (t.subgraph != 0) continue;
      const ValueId v = p_.value(t.name, 0);
      if (v < 0 || value_map_[static_cast<std::size_t>(v)] != kNoValue) continue;
      const auto same_shape = [&](absl::string_view r_name) {
        const TensorInfo* r_tensor = r_.initializer(r_name);
        return r_tensor != nullptr && !t.dims.empty() && t.dims == r_tensor->dims;
      };
      const absl::string_view stripped = internal::RuleQueries(rules_).StripValueSuffixes(t.name);
      if (same_shape(stripped)) {
        MapValue(v, r_.value(stripped, 0));
        continue;
      }
      const absl::string_view embedded = FindEmbeddedName(t.name, long_enough, same_shape);
      if (!embedded.empty()) MapValue(v, r_.value(embedded, 0));
    }
  }

  enum class Side { kProcessed, kReference };

  // How a graph is coloured, to break ties between equal signatures:
  // values without a producer count by the R name they carry (what the
  // seeds say: the numbering maps only values nodes write, so the anchors
  // are the same whenever they are read).
  ColourInput ColourInputOf(Side side) const {
    const auto named = [](absl::string_view v) -> std::uint64_t {
      return absl::Hash<absl::string_view>()(v) | 1;
    };
    if (side == Side::kReference) {
      return {&r_, [this, named](absl::string_view v) -> std::uint64_t {
                return r_.value(v, 0) != kNoValue ? named(v) : 0;
              }, &r_constant_, &r_ops_};
    }
    return {&p_, [this, named](absl::string_view v) -> std::uint64_t {
              const ValueId mapped = Mapped(p_.value(v, 0), v);
              return mapped == kNoValue ? 0 : named(r_.valueName(mapped));
            }, &p_constant_, &p_ops_};
  }

  void ColourBoth() {
    if (coloured_) return;
    coloured_ = true;
    ColourGraphs(ColourInputOf(Side::kProcessed), ColourInputOf(Side::kReference), &p_colours_,
                 &r_colours_);
  }

  // The R node an equal signature pairs p with: the first unclaimed one
  // whose neighbourhood (colour) looks like p's, far before near, else the
  // first unclaimed. *alike: the far colours agree.
  NodeId Choose(NodeId p, Candidates& c, bool* alike) {
    while (c.next < c.nodes.size() && r_claimed_[c.nodes[c.next]]) ++c.next;
    *alike = false;
    if (c.next == c.nodes.size()) return kNoNode;
    // Colours choose only between two or more; an aligned P's node p has R
    // node p's colours, the first unclaimed one's when that is p.
    if (c.nodes.size() == 1) return c.nodes[c.next];
    if (aligned_ && c.nodes[c.next] == p) {
      *alike = true;
      return p;
    }
    ColourBoth();
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
      const Node pn = p_.node(pi);
      const Node rn = r_.node(ri);
      if (pn.subgraph != 0 || rn.subgraph != 0) continue;
      for (std::size_t i = 0; i < std::min(pn.outputs.size(), rn.outputs.size()); ++i) {
        MapValue(pn.output_values[i], rn.output_values[i]);
      }
      for (std::size_t i = 0; i < std::min(pn.inputs.size(), rn.inputs.size()); ++i) {
        if (pn.inputs[i].empty() || rn.inputs[i].empty()) continue;
        const NodeId pc = p_.producer(pn.input_values[i]);
        const NodeId rc = r_.producer(rn.input_values[i]);
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
    if (r_by_name_.empty()) return;
    for (NodeId p = 0; p < static_cast<NodeId>(p_.size()); ++p) {
      const Node n = p_.node(p);
      if (n.name.empty()) continue;
      auto it = r_by_name_.find(n.name);
      if (it == r_by_name_.end()) continue;
      const Node r = r_.node(it->second);
      if (r.op_type == n.op_type && r.domain == n.domain && !r_claimed_[it->second]) {
        Pair(p, it->second, MatchRule::kSameName, false);
      }
    }
  }

  // P's input `k` of `n` as a signature token; false when it is not
  // matched yet.
  bool ProcessedToken(const Node& n, std::size_t k, ValueId* token) const {
    if (n.inputs[k].empty()) {
      *token = kEmptyToken;
      return true;
    }
    const ValueId v = n.input_values[k];
    const NodeId producer = p_.producer(v);
    if (producer != kNoNode && p_constant_[producer]) {
      *token = kConstToken;
      return true;
    }
    const ValueId mapped = Mapped(v, n.inputs[k]);
    if (mapped != kNoValue) {
      *token = ReferenceToken(mapped);
      return true;
    }
    // A constant folded into an initializer under a new name.
    if (producer == kNoNode && p_.initializerOf(v) != nullptr) {
      *token = kConstToken;
      return true;
    }
    return false;
  }

  // Value numbering from the graph inputs and initializers: a P node whose
  // op type and (matched) inputs, in order, are an R node's is that node.
  // Equal signatures pair in node order.
  void MatchStructure() {
    std::vector<ValueId> tokens;
    for (int pass = 0; pass < limits_.max_structure_passes; ++pass) {
      bool changed = false;
      for (NodeId p = 0; p < static_cast<NodeId>(p_.size()); ++p) {
        if (out_[p].rule != MatchRule::kNone) continue;
        const Node n = p_.node(p);
        if (n.subgraph != 0) continue;
        tokens.clear();
        bool ready = true, anchored = false;
        for (std::size_t k = 0; k < n.inputs.size(); ++k) {
          ValueId t;
          if (!ProcessedToken(n, k, &t)) {
            ready = false;
            break;
          }
          tokens.push_back(t);
          anchored |= t != kEmptyToken && t != kConstToken;
        }
        if (!ready || !anchored) continue;
        auto it = r_signatures_.find(SignatureHash(n, IsCommutative(p_ops_, p, n), &tokens));
        if (it == r_signatures_.end() || !SameSignature(it->second.nodes.front(), n, tokens)) {
          continue;
        }
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
    const Node n = p_.node(p);
    if (n.subgraph != 0) return;
    std::vector<NodeId> producers;
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      const ValueId mapped = Mapped(n.output_values[k], n.outputs[k]);
      if (mapped == kNoValue) continue;
      const NodeId r = r_.producer(mapped);
      if (r != kNoNode) producers.push_back(r);
    }
    if (producers.empty()) return;
    absl::flat_hash_set<ValueId> ins;
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueId mapped = Mapped(n.input_values[k], n.inputs[k]);
      if (mapped != kNoValue && r_.initializer(r_.valueName(mapped)) == nullptr) {
        ins.insert(mapped);
      }
    }
    std::vector<NodeId> span;
    if (!ins.empty()) span = Between(ins, producers);
    if (span.empty()) span = producers;
    std::sort(span.begin(), span.end());
    span.erase(std::unique(span.begin(), span.end()), span.end());
    out_[p].rule = MatchRule::kSpan;
    out_[p].reference_nodes.assign(span.begin(), span.end());
  }

  // R nodes on paths from `ins` to the outputs of `producers`: reachable
  // backwards from the producers without crossing `ins`, and forwards from
  // the consumers of `ins`. Empty when the walk exceeds the limit of one
  // span or what is left of the match's budget (span_budget_, which the
  // walk spends).
  std::vector<NodeId> Between(const absl::flat_hash_set<ValueId>& ins,
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
      const Node rn = r_.node(r);
      for (std::size_t k = 0; k < rn.inputs.size(); ++k) {
        ++work;
        const ValueId in = rn.input_values[k];
        if (in < 0 || ins.contains(in)) continue;
        const NodeId q = r_.producer(in);
        if (q != kNoNode) stack.push_back(q);
      }
    }
    // Consumer lists can be long (a mask read by every layer): the forward
    // walk is bounded by edges visited, not nodes.
    absl::flat_hash_set<NodeId> forward;
    std::size_t edges = 0;
    const std::size_t max_edges =
        std::min(4 * limits_.max_span_nodes, span_budget_ - std::min(span_budget_, work));
    auto push_consumers = [&](ValueId v) {
      for (NodeId c : r_.consumers(v)) {
        ++work;
        if (++edges > max_edges) return false;
        if (back.contains(c)) stack.push_back(c);
      }
      return true;
    };
    for (ValueId v : ins) {
      if (!push_consumers(v)) return {};
    }
    while (!stack.empty()) {
      const NodeId r = stack.back();
      stack.pop_back();
      if (!forward.insert(r).second) continue;
      for (ValueId o : r_.node(r).output_values) {
        if (o >= 0 && !push_consumers(o)) return {};
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
      if (r_.value(prefix, 0) != kNoValue) return;
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
  const OpTraits p_ops_, r_ops_;  // for IsCommutative
  absl::flat_hash_map<absl::string_view, NodeId> r_by_name_;  // unique names
  absl::flat_hash_map<std::uint64_t, Candidates> r_signatures_;  // by SignatureHash
  GraphColours p_colours_, r_colours_;  // once ColourBoth ran
  bool coloured_ = false;
  bool aligned_ = false;  // ColouredAlikeByPosition(p_, r_)
  mutable std::vector<ValueId> scratch_;  // SameSignature's tokens
  // P main-graph value -> R main-graph value it carries (kNoValue: none yet).
  std::vector<ValueId> value_map_;
};

}  // namespace

std::vector<NodeMatch> MatchToReference(const Graph& processed, const Graph& reference,
                                        const Rules& rules, const MatchLimits& limits,
                                        MatchTrace* trace) {
  Matcher matcher(processed, reference, rules, limits);
  std::vector<NodeMatch> matches = matcher.Run();
  if (trace != nullptr) *trace = matcher.trace();
  return matches;
}

}  // namespace internal
}  // namespace semmap
