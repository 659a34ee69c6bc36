#include "mapping/strategies/neighbourhood.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"

namespace semmap {
namespace internal {
namespace {

// Confidence of the rules below, before the weakest neighbour's factor
// (mapping/core/confidence.h says how they were measured).
using confidence::neighbourhood::kFollowAgreeing;
using confidence::neighbourhood::kSourceAgreeing;
using confidence::neighbourhood::kDisagreeing;
using confidence::neighbourhood::kBothSides;
using confidence::neighbourhood::kOneSide;
using confidence::neighbourhood::kWeightToConsumer;
using confidence::neighbourhood::kNamed;
using confidence::neighbourhood::kFirstOfMerged;

struct Side {
  ModuleId lca = kNoModule;
  std::size_t count = 0;
  bool agree = true;
  double weakest = 1.0;

  void Add(const Manifest& manifest, const MappingRecord& m) {
    if (!m.mapped()) return;
    if (lca == kNoModule) {
      lca = m.module;
    } else if (m.module != lca) {
      agree = false;
      lca = manifest.lowestCommonAncestor(lca, m.module);
    }
    ++count;
    weakest = std::min(weakest, m.confidence);
  }
};

// A module holding parameters (Linear, LayerNorm, Embedding) computes
// nothing outside its own ops: a node that merely touches its output runs in
// the enclosing module's forward.
ModuleId Lift(const Manifest& manifest, ModuleId m) {
  if (m == kNoModule) return m;
  const ModuleInfo& info = manifest.module(m);
  return !info.parameters.empty() && info.parent != kNoModule ? info.parent : m;
}

// True when the node reads an initializer of rank 2 or more: a weight.
bool ReadsWeight(const Graph& graph, const Node& n) {
  for (ValueId v : n.input_values) {
    const TensorInfo* t = graph.initializerOf(v);
    if (t != nullptr && t->dims.size() >= 2) return true;
  }
  return false;
}


// The rules of InferFromNeighbourhood (neighbourhood.h) for one node.
class NodeRules {
 public:
  NodeRules(const Graph& graph, const Manifest& manifest, const Rules& rules, const OpTraits& ops,
            const std::vector<bool>& shape, const OrderHints& hints, std::vector<MappingRecord>* out,
            EvidenceStore* evidence)
      : graph_(graph), manifest_(manifest), ops_(ops), shape_(shape), hints_(hints), out_(*out),
        evidence_(evidence), rules_(rules) {}

  // Maps unmapped node `i` from its neighbours' current answers; with
  // `one_sided`, also from its producers or its consumers alone. Returns
  // true when it did.
  bool Infer(std::size_t i, bool one_sided) {
    const Node& n = graph_.node(static_cast<NodeId>(i));
    Side producers;
    Side consumers;
    bool has_producer = false;
    for (ValueId v : n.input_values) {
      const NodeId p = graph_.producer(v);
      if (p == kNoNode) continue;
      has_producer = true;
      producers.Add(manifest_, out_[p]);
    }
    bool has_consumer = false;
    for (ValueId value : n.output_values) {
      for (NodeId c : graph_.consumers(value)) {
        if (c == static_cast<NodeId>(i)) continue;
        has_consumer = true;
        consumers.Add(manifest_, out_[c]);
      }
    }
    MappingRecord& m = out_[i];
    m.strategy = Strategy::kNeighbourhood;
    // Read by nodes of several modules: perhaps copies a tool merged.
    const bool merged = consumers.count > 0 && !consumers.agree &&
                        (shape_[i] || ops_.FollowsConsumers(static_cast<NodeId>(i)));
    NodeId first = kNoNode;
    ModuleId copy = kNoModule;
    if (merged && (first = FirstOfMerged(n)) != kNoNode) {
      m.module = out_[first].module;
      m.confidence = kFirstOfMerged * consumers.weakest;
      m.strategy = Strategy::kOpRule;
      m.evidence = evidence_->Intern(absl::StrCat(
          n.op_type, " is an argument of ", consumers.count,
          " nodes of several modules (copies a tool merged): the first one's"));
    } else if (merged && !ops_.IsQuantizerOp(static_cast<NodeId>(i)) &&
               (copy = FirstCopy(n, consumers)) != kNoModule) {
      m.module = copy;
      m.confidence = kFirstOfMerged * consumers.weakest;
      m.strategy = Strategy::kOpRule;
      m.evidence = evidence_->Intern(absl::StrCat(
          "read by ", consumers.count, " nodes of several modules; ", manifest_.path(m.module),
          "'s forward runs an op exported as ", n.op_type,
          ", their common ancestor's none: the first reader's computed it"));
    } else if (ops_.IsDequantizeOp(static_cast<NodeId>(i)) && DequantizesResult(n)) {
      // It completes the op that computed a quantized result (a lookup in
      // a quantized table): that op's module.
      m.module = out_[graph_.producer(n.input_values[0])].module;
      m.confidence = kFollowAgreeing * out_[graph_.producer(n.input_values[0])].confidence;
      m.strategy = Strategy::kOpRule;
      m.evidence = evidence_->Intern(absl::StrCat(n.op_type, " converts the result of the op before it"));
    } else if (consumers.count > 0 && ops_.FollowsConsumers(static_cast<NodeId>(i))) {
      m.module = Placed(i, consumers);
      m.confidence = (consumers.agree ? kFollowAgreeing : kDisagreeing) * consumers.weakest;
      m.strategy = Strategy::kOpRule;
      m.evidence = evidence_->Intern(absl::StrCat(n.op_type, " follows its ", consumers.count, " consumers"));
    } else if (consumers.count > 0 && shape_[i]) {
      m.module = Placed(i, consumers);
      m.confidence = (consumers.agree ? kFollowAgreeing : kDisagreeing) * consumers.weakest;
      m.strategy = Strategy::kOpRule;
      m.evidence = evidence_->Intern(absl::StrCat("shape computation follows its ", consumers.count, " consumers"));
    } else if (consumers.count > 0 && consumers.agree && ReadsWeight(graph_, n) &&
               !manifest_.parameters(consumers.lca).empty()) {
      m.module = consumers.lca;
      m.confidence = kWeightToConsumer * consumers.weakest;
      m.evidence = evidence_->Intern("reads an unnamed weight; its consumers' module holds the parameters");
    } else if (!has_producer && consumers.count > 0) {
      m.module = consumers.lca;
      m.confidence = (consumers.agree ? kSourceAgreeing : kDisagreeing) * consumers.weakest;
      m.evidence = evidence_->Intern(absl::StrCat(consumers.agree ? "source node; all " : "source node; lowest common ancestor of ",
                                consumers.count, " consumers"));
    } else if (producers.count > 0 && consumers.count > 0) {
      m.module = manifest_.lowestCommonAncestor(Lift(manifest_, producers.lca),
                                                Lift(manifest_, consumers.lca));
      m.confidence = kBothSides * std::min(producers.weakest, consumers.weakest);
      m.evidence = evidence_->Intern(absl::StrCat("lowest common ancestor of ", producers.count,
                                " producers and ", consumers.count, " consumers"));
    } else if ((!has_consumer || (one_sided && consumers.count == 0)) && producers.count > 0 &&
               producers.agree && ops_.FollowsConsumers(static_cast<NodeId>(i))) {
      // A cast with no consumer feeds a graph output (a converter's cast
      // back to the output's type), or one whose consumers no evidence
      // reaches (a quantizer's QuantizeLinear before the DequantizeLinear
      // feeding the output): it converts its producer's result.
      m.module = producers.lca;
      m.confidence = kFollowAgreeing * producers.weakest;
      m.strategy = Strategy::kOpRule;
      m.evidence = evidence_->Intern(absl::StrCat(n.op_type, " feeds a graph output; it follows its producer"));
    } else if (!one_sided) {
      return false;
    } else if (consumers.count > 0) {
      m.module = Lift(manifest_, consumers.lca);
      m.confidence = kOneSide * consumers.weakest;
      m.evidence = evidence_->Intern(absl::StrCat("from ", consumers.count, " consumers only"));
    } else if (producers.count > 0) {
      m.module = Lift(manifest_, producers.lca);
      m.confidence = kOneSide * producers.weakest;
      m.evidence = evidence_->Intern(absl::StrCat("from ", producers.count, " producers only"));
    } else {
      m.strategy = Strategy::kUnmapped;
      return false;
    }
    return true;
  }

 private:
  // Whether `n`'s first input is the result of a mapped node that is no
  // quantizer op itself (a dequantization of a quantized op's output, not
  // of a weight nor of a quantize / dequantize pair).
  bool DequantizesResult(const Node& n) const {
    if (n.input_values.empty()) return false;
    const NodeId p = graph_.producer(n.input_values[0]);
    return p != kNoNode && out_[p].mapped() && !ops_.IsQuantizerOp(p) && !ops_.FollowsConsumers(p);
  }

  // Whether every consumer of `n` reads its outputs only as an argument of
  // its op (rules "shape_operand_ops"), and it has one.
  bool ReadAsArgument(const Node& n) const {
    bool any = false;
    for (ValueId value : n.output_values) {
      for (NodeId c : graph_.consumers(value)) {
        if (!ReadsAsArgument(graph_, ops_, c, value)) return false;
        any = true;
      }
    }
    return any;
  }

  // The first of `n`'s consumers when every one reads its outputs only as
  // an argument of its op (rules "shape_operand_ops": a view's shape, an
  // unsqueeze's axes) and is mapped; kNoNode otherwise.
  NodeId FirstOfMerged(const Node& n) const {
    NodeId first = kNoNode;
    for (ValueId value : n.output_values) {
      for (NodeId c : graph_.consumers(value)) {
        if (!ReadsAsArgument(graph_, ops_, c, value) || !out_[c].mapped()) return kNoNode;
        if (first == kNoNode || c < first) first = c;
      }
    }
    return first;
  }

  // With forward signatures, for a node read by nodes of several modules:
  // the module on the way from their lowest common ancestor down to the
  // first consumer's, deepest first, whose own forward runs an op that
  // may be exported as the node's type, when the ancestor's (or, for a
  // container, its first traced ancestor's) runs none. The ancestor did
  // not compute it: the first reader did (a norm's cast its residual also
  // reads; the first of copies a tool merged). kNoModule otherwise.
  ModuleId FirstCopy(const Node& n, const Side& consumers) {
    NodeId first = kNoNode;
    std::size_t count = 0;
    for (ValueId value : n.output_values) {
      for (NodeId c : graph_.consumers(value)) {
        ++count;
        if (first == kNoNode || c < first) first = c;
      }
    }
    if (first == kNoNode || count != consumers.count || !out_[first].mapped()) return kNoModule;
    if (OwnerRuns(consumers.lca, n.op_type)) return kNoModule;
    for (ModuleId m = out_[first].module; m != kNoModule && m != consumers.lca; m = manifest_.parent(m)) {
      if (Runs(m, n.op_type)) return m;
    }
    return kNoModule;
  }

  // Runs() of `module`, or of its first traced ancestor for a container;
  // true when there is none.
  bool OwnerRuns(ModuleId module, absl::string_view op_type) {
    while (module != kNoModule && !manifest_.traced(module)) module = manifest_.parent(module);
    return module == kNoModule || Runs(module, op_type);
  }

  // Whether `module`'s own recorded forward runs an op that may be
  // exported as `op_type` (rules "forward_ops").
  bool Runs(ModuleId module, absl::string_view op_type) {
    const auto [it, added] = runs_.try_emplace(std::make_pair(module, op_type), false);
    if (added) {
      const RuleQueries rules(rules_);
      for (const ForwardEvent& e : manifest_.forward(module)) {
        if (e.call == kNoModule && rules.MayExportAs(e.op, op_type)) {
          it->second = true;
          break;
        }
      }
    }
    return it->second;
  }

  // Where node `i` runs: its consumers' module, widened to the module
  // active at its position in execution order — only where the consumers'
  // own module was inferred (named consumers need no help).
  ModuleId Placed(std::size_t i, const Side& consumers) const {
    ModuleId target = consumers.lca;
    // An argument of its consumers' ops is computed by their calls.
    if (consumers.weakest >= kNamed || ReadAsArgument(graph_.node(static_cast<NodeId>(i)))) return target;
    // A node computed from initializers alone has no place in the forward:
    // exporters hoist it (TorchScript's Identity of a de-duplicated
    // initializer opens the graph), so its position says nothing.
    if (!hints_.next_module.empty() && hints_.next_module[i] != kNoModule &&
        !FromInitializersOnly(graph_.node(static_cast<NodeId>(i)))) {
      target = manifest_.lowestCommonAncestor(target, hints_.next_module[i]);
    }
    if (shape_[i] && !hints_.library.empty()) {
      while (hints_.library[target] && manifest_.parent(target) != kNoModule) {
        target = manifest_.parent(target);
      }
    }
    return target;
  }

  // True when every input of `n` is an initializer (and it has one).
  bool FromInitializersOnly(const Node& n) const {
    if (n.input_values.empty()) return false;
    for (ValueId v : n.input_values) {
      if (graph_.initializerOf(v) == nullptr) return false;
    }
    return true;
  }

  const Graph& graph_;
  const Manifest& manifest_;
  const OpTraits& ops_;
  const std::vector<bool>& shape_;
  const OrderHints& hints_;
  std::vector<MappingRecord>& out_;
  EvidenceStore* evidence_;
  const Rules& rules_;
  absl::flat_hash_map<std::pair<ModuleId, absl::string_view>, bool> runs_;  // Runs()
};

}  // namespace

int InferFromNeighbourhood(const MappingContext& context, const std::vector<bool>& shape,
                           const OrderHints& hints, int max_passes) {
  const Graph& graph = context.graph;
  std::vector<MappingRecord>& out = context.records;
  NodeRules rules(graph, context.manifest, context.rules, context.ops, shape, hints,
                  &context.records, &context.evidence);
  int passes = 0;
  // One-sided evidence (only producers, or only consumers of a node that
  // also has unmapped producers) is used only once two-sided evidence has
  // reached its fixed point, so it never pre-empts a better answer.
  bool one_sided = false;
  bool changed = true;
  while (passes < max_passes) {
    if (!changed) {
      if (one_sided) break;
      one_sided = true;
    }
    changed = false;
    ++passes;
    // Sweeps alternate direction: evidence flows forward from producers in
    // one and backward from consumers in the next, so a chain of any length
    // settles in a few passes rather than one pass per node.
    const bool forward = passes % 2 == 1;
    for (std::size_t k = 0; k < graph.size(); ++k) {
      const std::size_t i = forward ? k : graph.size() - 1 - k;
      if (out[i].mapped()) continue;
      if (rules.Infer(i, one_sided)) changed = true;
    }
  }
  return passes;
}

}  // namespace internal
}  // namespace semmap
