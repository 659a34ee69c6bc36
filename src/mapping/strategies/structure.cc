#include "mapping/strategies/structure.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "manifest/rule_queries.h"
#include "mapping/core/confidence.h"
#include "mapping/strategies/forward_signature.h"

namespace semmap {
namespace internal {
namespace {

// Confidence of each rule (mapping/confidence.h).
using confidence::structure::kAlignedWeight;
using confidence::structure::kHead;
using confidence::structure::kSignature;
using confidence::structure::kNameFamily;
using confidence::structure::kTail;
using confidence::structure::kModuleOps;
using confidence::structure::kInterval;
using confidence::structure::kLca;
using confidence::structure::kDisorderFactor;
// Name families look at the last few '_' of names of bounded length: the
// work per name stays linear (a hostile 16 MB name is skipped).
constexpr std::size_t kMaxFamilyName = 1024;
constexpr int kMaxFamilyCuts = 8;
// Available() looks through at most this many consumers of one value.
constexpr std::size_t kMaxConsumerScan = 256;
// When the anchors' order disagrees with the manifest's module order (a
// re-sorted graph), order-based answers are worth less (kDisorderFactor).
// Registration order differs from execution order in many models (CLIP's
// towers, Whisper's encoder and decoder: 0.6 in their exports' own order),
// so only a clearly worse agreement means a re-sorted graph.
constexpr double kOrderAgreementFloor = 0.5;
// The re-linearised order replaces the file's only when clearly better.
constexpr double kRelinearisedMargin = 0.04;
// How far ahead of the first unmatched parameter an unnamed weight may
// match: absorbs parameters that the export dropped or fused.
constexpr std::size_t kAlignWindow = 32;
constexpr int kMaxPassthrough = 4;
// At least one in this many of the manifest's parameters must be named by an
// initializer of the graph (ManifestFits).
constexpr std::size_t kMinNamedShare = 10;
// Without names, an alignment confirms the manifest by itself with at least
// this many weights of at least this many shapes (Alignment::Confirms).
constexpr std::size_t kMinConfirmingWeights = 8;
constexpr std::size_t kMinConfirmingShapes = 3;
// At least one node in this many must carry a creation counter in its name
// for the names to give the order (CreationOrder).
constexpr std::size_t kMinKeyedShare = 5;

bool Compatible(absl::Span<const std::int64_t> dims, absl::Span<const std::int64_t> shape) {
  if (dims.size() != shape.size()) return false;
  if (dims == shape) return true;
  return dims.size() == 2 && dims[0] == shape[1] && dims[1] == shape[0];
}

class Structure {
 public:
  Structure(const Graph& graph, const Manifest& manifest, const Rules& rules,
            const OpTraits& ops, const TensorEvidence& tensors,
            const std::vector<bool>& shape, std::vector<MappingRecord>* mappings,
            EvidenceStore* evidence)
      : graph_(graph), manifest_(manifest), rules_(rules), ops_(ops), tensors_(tensors),
        shape_(shape), out_(*mappings), evidence_(evidence), n_(graph.size()) {
    library_.resize(manifest.size());
    module_ops_.resize(manifest.size());
    params_below_.assign(manifest.size(), false);
    // Both rules read only the module's classes: asked once per distinct
    // pair (a model has few classes and many modules).
    struct ClassRules {
      bool library = false;
      int module_ops = -1;
    };
    absl::flat_hash_map<std::pair<absl::string_view, absl::string_view>, ClassRules> by_class;
    for (std::size_t m = manifest.size(); m-- > 0;) {
      const ModuleInfo& info = manifest.module(static_cast<ModuleId>(m));
      auto known = by_class.try_emplace(std::make_pair(absl::string_view(info.class_name),
                                                       absl::string_view(info.qualified_class)));
      if (known.second) {
        known.first->second = {internal::RuleQueries(rules).isLibraryModule(info), internal::RuleQueries(rules).moduleOpsRule(info)};
      }
      // A library module holding parameters of its own beside children
      // (an attention with its packed projection weight and an output
      // Linear) runs ops of its own between theirs: it can own a node.
      library_[m] = known.first->second.library && !(!info.children.empty() && !info.parameters.empty());
      module_ops_[m] = info.parameters.empty() ? known.first->second.module_ops : -1;
      if (!info.parameters.empty()) params_below_[m] = true;
      if (params_below_[m] && info.parent != kNoModule) params_below_[info.parent] = true;
    }
    op_children_.resize(manifest.size());
    for (std::size_t m = 0; m < manifest.size(); ++m) {
      const ModuleInfo& info = manifest.module(static_cast<ModuleId>(m));
      if (!params_below_[m] && module_ops_[m] >= 0 && info.parent != kNoModule) {
        op_children_[info.parent].push_back(static_cast<ModuleId>(m));
      }
    }
  }

  // With `creation_order`, the nodes are ordered by the exporter's creation
  // counters where names carry them (CreationOrder); else as in the file.
  StructureCounts Run(bool creation_order) {
    StructureCounts counts;
    // Nothing to do for an export whose names answered every node.
    bool any = false;
    for (std::size_t i = 0; i < n_ && !any; ++i) any = Candidate(static_cast<NodeId>(i));
    if (!any) return counts;
    const bool named = ManifestFits();
    // Names that carry the exporter's creation counter give back the
    // order of the export itself, whatever a tool did to the file's order.
    if (creation_order) {
      SetOrder(CreationOrder(&counts.creation_order));
    } else {
      SetOrder(FileOrder());
    }
    if (named) {
      counts.aligned_weights = AlignUnnamedWeights(nullptr);
    } else {
      // No initializer name confirms the manifest (every weight anonymous:
      // a CNN whose BatchNorms were folded into its Convs): the alignment
      // must confirm it by itself, or nothing is inferred.
      const std::vector<MappingRecord> before = out_;
      Alignment alignment;
      counts.aligned_weights = AlignUnnamedWeights(&alignment);
      if (!alignment.Confirms()) {
        out_ = before;
        counts.aligned_weights = 0;
        return counts;
      }
    }
    NameFamilies();
    anchored_.assign(n_, false);
    for (std::size_t i = 0; i < n_; ++i) {
      const MappingRecord& m = out_[i];
      anchored_[i] = m.mapped() && m.confidence >= 0.5 && m.strategy != Strategy::kNeighbourhood &&
                     m.strategy != Strategy::kOpRule;
    }
    // The file's node order, or a re-linearisation of the graph when the
    // file was re-sorted by a tool: whichever agrees better with the
    // manifest's module order.
    counts.order_agreement = OrderAgreement();
    if (counts.order_agreement < 1.0) {
      std::vector<NodeId> saved = order_;
      SetOrder(DepthFirstOrder());
      const double agreement = OrderAgreement();
      if (agreement >= counts.order_agreement + kRelinearisedMargin) {
        counts.order_agreement = agreement;
        counts.relinearised = true;
      } else {
        SetOrder(std::move(saved));
      }
    }
    factor_ = counts.order_agreement < kOrderAgreementFloor ? kDisorderFactor : 1.0;
    BuildBuckets();
    first_anchor_.assign(manifest_.size(), n_);
    for (NodeId i : order_) {
      if (anchored_[i]) first_anchor_[out_[i].module] = std::min(first_anchor_[out_[i].module], pos_[i]);
    }
    if (const ForwardSignatures signatures(manifest_, rules_, n_); signatures.available()) {
      for (const std::vector<NodeId>& bucket : buckets_) {
        counts.signature_matches += Signatures(bucket, signatures);
      }
    }
    for (std::vector<NodeId>& bucket : buckets_) {
      ModuleOpRegions(bucket);
      Heads(bucket);
      Tails(bucket);
    }
    ComputeStarts();
    for (std::vector<NodeId>& bucket : buckets_) Intervals(bucket);
    // The module at each position, for the neighbourhood: only from an
    // order that agrees well with the manifest's.
    if (factor_ == 1.0) {
      counts.hints.library = library_;
      counts.hints.next_module.assign(n_, kNoModule);
      for (const std::vector<NodeId>& bucket : buckets_) {
        ModuleId next = kNoModule;
        for (std::size_t k = bucket.size(); k-- > 0;) {
          counts.hints.next_module[bucket[k]] = next;
          if (Settled(bucket[k])) next = out_[bucket[k]].module;
        }
      }
    }
    return counts;
  }

 private:
  std::vector<NodeId> FileOrder() const {
    std::vector<NodeId> order(n_);
    for (std::size_t i = 0; i < n_; ++i) order[i] = static_cast<NodeId>(i);
    return order;
  }

  bool Candidate(NodeId i) const {
    const Node& n = graph_.node(i);
    return !out_[i].mapped() && !ops_.followsConsumers(i) && !shape_[i] && !n.inputs.empty();
  }

  void Assign(NodeId i, ModuleId module, double confidence, std::string evidence) {
    MappingRecord& m = out_[i];
    m.module = module;
    m.confidence = confidence * factor_;
    m.strategy = Strategy::kStructure;
    m.evidence = evidence_->Intern(std::move(evidence));
  }

  // The structure is read against the manifest only when the graph's
  // initializer names show it is this model's: enough of the manifest's
  // parameters are named by an initializer. Another model's manifest of
  // similar shapes must not be "aligned" into a confident-looking answer.
  bool ManifestFits() const {
    std::size_t params = 0;
    for (std::size_t m = 0; m < manifest_.size(); ++m) {
      params += manifest_.module(static_cast<ModuleId>(m)).parameters.size();
    }
    std::size_t named = 0;
    for (const TensorInfo& t : graph_.initializers()) {
      if (tensors_.ParameterOwner(t.name) != kNoModule) ++named;
    }
    return params > 0 && named * kMinNamedShare >= params;
  }

  // --- Step 1: unnamed weights aligned with unclaimed parameters. ---

  // The rank >= 2 initializer node `i` reads directly or through
  // pass-through ops, when no parameter is named after it; else nullptr.
  const TensorInfo* UnnamedWeight(NodeId i) const {
    const Node& n = graph_.node(i);
    for (ValueId value : n.input_values) {
      for (int depth = 0; depth <= kMaxPassthrough && value != kNoValue; ++depth) {
        if (const TensorInfo* t = graph_.initializerOf(value)) {
          if (t->dims.size() >= 2 && tensors_.ParameterOwner(t->name) == kNoModule) return t;
          break;
        }
        const NodeId p = graph_.producer(value);
        if (p == kNoNode || !ops_.isWeightPassthrough(p) || graph_.node(p).inputs.empty()) break;
        value = graph_.node(p).input_values[0];
      }
    }
    return nullptr;
  }

  // The module every consumer of the node's outputs is anchored in (a
  // MatMul's bias Add names its Linear), or kNoModule.
  ModuleId ConsumersModule(NodeId i) const {
    const Node& n = graph_.node(i);
    ModuleId module = kNoModule;
    for (ValueId v : n.output_values) {
      for (NodeId c : graph_.consumers(v)) {
        const MappingRecord& m = out_[c];
        if (!m.mapped() || m.strategy != Strategy::kTensorNames || (module != kNoModule && m.module != module)) {
          return kNoModule;
        }
        module = m.module;
      }
    }
    return module;
  }

  template <typename Params>
  static std::size_t ParamOf(const Params& params, const std::vector<bool>& used, ModuleId module,
                             absl::Span<const std::int64_t> dims) {
    // `params` is in module order: search the module's range only.
    auto first = std::lower_bound(params.begin(), params.end(), module,
                                  [](const auto& p, ModuleId m) { return p.module < m; });
    for (auto it = first; it != params.end() && it->module == module; ++it) {
      const std::size_t j = static_cast<std::size_t>(it - params.begin());
      if (!used[j] && Compatible(dims, it->spec->shape)) return j;
    }
    return params.size();
  }

  // What an alignment of unnamed weights found, to judge it on its own.
  struct Alignment {
    std::size_t weights = 0;     // distinct unnamed weights read
    std::size_t aligned = 0;     // of them, aligned with a parameter
    std::size_t parameters = 0;  // unclaimed matrix parameters of the manifest
    absl::flat_hash_set<std::vector<std::int64_t>> shapes;  // of the aligned

    // A long run of varied shapes found in the manifest's order is this
    // model's: nearly every unnamed weight aligned, most of the manifest's
    // matrix parameters used, several distinct shapes. A few weights, or
    // many of one shape, could align with any manifest of that layer.
    bool Confirms() const {
      return aligned >= kMinConfirmingWeights && aligned * 10 >= weights * 9 &&
             aligned * 4 >= parameters * 3 && shapes.size() >= kMinConfirmingShapes;
    }
  };

  // Step 1. With `alignment`, also counts what it found.
  std::size_t AlignUnnamedWeights(Alignment* alignment) {
    // Parameters some initializer is named after are accounted for.
    absl::flat_hash_set<std::pair<ModuleId, std::string>> claimed;
    for (const TensorInfo& t : graph_.initializers()) {
      const ModuleId owner = tensors_.ParameterOwner(t.name);
      if (owner == kNoModule) continue;
      const absl::string_view stripped = internal::RuleQueries(rules_).stripValueSuffixes(t.name);
      const std::size_t dot = stripped.rfind('.');
      claimed.emplace(owner, std::string(dot == absl::string_view::npos ? stripped : stripped.substr(dot + 1)));
    }
    struct Param {
      ModuleId module;
      const TensorSpec* spec;
    };
    std::vector<Param> params;
    for (std::size_t m = 0; m < manifest_.size(); ++m) {
      for (const TensorSpec& spec : manifest_.module(static_cast<ModuleId>(m)).parameters) {
        if (spec.shape.size() >= 2 && !claimed.contains({static_cast<ModuleId>(m), spec.name})) {
          params.push_back({static_cast<ModuleId>(m), &spec});
        }
      }
    }
    if (params.empty()) return 0;
    if (alignment != nullptr) alignment->parameters = params.size();
    std::vector<bool> used(params.size(), false);
    absl::flat_hash_map<absl::string_view, std::size_t> by_initializer;
    absl::flat_hash_set<absl::string_view> counted;  // unnamed weights met
    std::size_t first_unused = 0;
    std::size_t aligned = 0;
    for (const NodeId i : order_) {
      if (out_[i].mapped() || ops_.isWeightPassthrough(i) || ops_.followsConsumers(i)) continue;
      const TensorInfo* weight = UnnamedWeight(i);
      if (weight == nullptr) continue;
      const bool seen = by_initializer.contains(weight->name) || !counted.insert(weight->name).second;
      if (alignment != nullptr && !seen) ++alignment->weights;
      std::size_t match = params.size();
      if (auto it = by_initializer.find(weight->name); it != by_initializer.end()) {
        match = it->second;
      } else if (const ModuleId holder = ConsumersModule(i); holder != kNoModule &&
                 (match = ParamOf(params, used, holder, weight->dims)) != params.size()) {
        used[match] = true;
        by_initializer.emplace(weight->name, match);
      } else {
        while (first_unused < params.size() && used[first_unused]) ++first_unused;
        const std::size_t end = std::min(params.size(), first_unused + kAlignWindow);
        for (std::size_t j = first_unused; j < end; ++j) {
          if (!used[j] && Compatible(weight->dims, params[j].spec->shape)) {
            match = j;
            break;
          }
        }
        if (match == params.size()) continue;
        used[match] = true;
        by_initializer.emplace(weight->name, match);
      }
      const Param& p = params[match];
      if (alignment != nullptr && !seen) {
        ++alignment->aligned;
        alignment->shapes.insert(p.spec->shape);
      }
      MappingRecord& m = out_[i];
      m.module = p.module;
      m.confidence = kAlignedWeight;
      m.strategy = Strategy::kStructure;
      m.evidence = evidence_->Intern(absl::StrCat("unnamed weight ", weight->name, " aligned by shape and order with ",
                                manifest_.module(p.module).path, ".", p.spec->name));
      ++aligned;
    }
    return aligned;
  }

  // Nodes a tool derived from another by extending its name
  // ("node_MatMul_55_quant", "node_MatMul_55_quant_scales_mul" from the
  // quantizer's "node_MatMul_55_quant") belong with the node named by the
  // longest such prefix, once that one is mapped.
  void NameFamilies() {
    absl::flat_hash_map<absl::string_view, NodeId> by_name;
    for (std::size_t i = 0; i < n_; ++i) {
      absl::string_view name = graph_.node(static_cast<NodeId>(i)).name;
      if (!name.empty()) by_name.emplace(name, static_cast<NodeId>(i));
    }
    // Roots first: a shorter name is never derived from a longer one.
    std::vector<NodeId> by_length;
    for (std::size_t i = 0; i < n_; ++i) by_length.push_back(static_cast<NodeId>(i));
    std::stable_sort(by_length.begin(), by_length.end(), [&](NodeId a, NodeId b) {
      return graph_.node(a).name.size() < graph_.node(b).name.size();
    });
    for (NodeId i : by_length) {
      if (out_[i].mapped()) continue;
      absl::string_view name = graph_.node(i).name;
      if (name.empty() || name.size() > kMaxFamilyName || internal::RuleQueries(rules_).isDerivedNodeName(name)) continue;
      int tries = 0;
      for (std::size_t cut = name.rfind('_'); cut != std::string::npos && cut > 0 && tries++ < kMaxFamilyCuts;
           cut = name.rfind('_', cut - 1)) {
        // "_4" numbers another call of the same op ("node_linear_4"), it
        // does not derive from "node_linear".
        if (cut + 1 < name.size() && absl::ascii_isdigit(static_cast<unsigned char>(name[cut + 1]))) continue;
        auto it = by_name.find(absl::string_view(name).substr(0, cut));
        if (it == by_name.end()) continue;
        const MappingRecord& root = out_[it->second];
        if (root.mapped() && root.confidence >= 0.5) {
          MappingRecord& m = out_[i];
          m.module = root.module;
          m.confidence = std::min(root.confidence, kNameFamily);
          m.strategy = Strategy::kStructure;
          m.evidence = evidence_->Intern(absl::StrCat("named after node ", it->first));
        }
        break;
      }
    }
  }

  // --- Step 2: execution order. ---

  // Share of consecutive anchors (of different modules) whose modules come
  // in manifest order, or leave the previous module's subtree for a later
  // one. 1 for an export in execution order; lower for a re-sorted graph.
  double OrderAgreement() const {
    std::size_t pairs = 0, agree = 0;
    ModuleId last = kNoModule;
    for (NodeId i : order_) {
      if (!anchored_[i] || graph_.node(i).subgraph != 0) continue;
      const ModuleId m = out_[i].module;
      if (last != kNoModule && m != last) {
        ++pairs;
        if (m > last || manifest_.isAncestorOrSelf(m, last)) ++agree;
      }
      last = m;
    }
    return pairs == 0 ? 1.0 : static_cast<double>(agree) / static_cast<double>(pairs);
  }

  // The file's order, or, when enough names carry an exporter's creation
  // counter (rules "order_keys"), the nodes sorted by that counter; a node
  // without one sorts right after the latest of its producers.
  std::vector<NodeId> CreationOrder(bool* used) const {
    std::vector<NodeId> order(n_);
    for (std::size_t i = 0; i < n_; ++i) order[i] = static_cast<NodeId>(i);
    *used = false;
    std::vector<std::uint64_t> key(n_, 0);
    std::size_t keyed = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      const Node& n = graph_.node(static_cast<NodeId>(i));
      std::uint64_t k = 0;
      bool own = internal::RuleQueries(rules_).orderKey(n.name, &k);
      for (std::size_t o = 0; o < n.outputs.size() && !own; ++o) own = internal::RuleQueries(rules_).orderKey(n.outputs[o], &k);
      if (own) {
        ++keyed;
        key[i] = k;
        continue;
      }
      // The file is in topological order, so producers are keyed first.
      for (ValueId v : n.input_values) {
        const NodeId p = graph_.producer(v);
        if (p != kNoNode && static_cast<std::size_t>(p) < i) key[i] = std::max(key[i], key[p]);
      }
    }
    if (keyed * kMinKeyedShare < n_) return order;
    std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return key[a] < key[b]; });
    *used = true;
    return order;
  }

  void SetOrder(std::vector<NodeId> order) {
    order_ = std::move(order);
    pos_.assign(n_, 0);
    for (std::size_t k = 0; k < order_.size(); ++k) pos_[order_[k]] = k;
  }

  // Main-graph nodes in the order a forward pass would run them: post-order
  // depth first from the graph outputs, each node's inputs in input order
  // (a node's producer chain right before it). Other graph bodies keep the
  // file's order, after the main graph.
  std::vector<NodeId> DepthFirstOrder() const {
    std::vector<NodeId> order;
    order.reserve(n_);
    std::vector<std::uint8_t> state(n_, 0);  // 0 new, 1 open, 2 emitted
    std::vector<std::pair<NodeId, std::size_t>> stack;
    auto visit = [&](NodeId root) {
      if (root == kNoNode || state[root] != 0) return;
      stack.emplace_back(root, 0);
      state[root] = 1;
      while (!stack.empty()) {
        auto& [node, next_input] = stack.back();
        const Node& n = graph_.node(node);
        if (next_input < n.inputs.size()) {
          absl::string_view v = n.inputs[next_input++];
          const NodeId p = v.empty() ? kNoNode : graph_.producer(v, 0);
          if (p != kNoNode && state[p] == 0 && graph_.node(p).subgraph == 0) {
            state[p] = 1;
            stack.emplace_back(p, 0);
          }
          continue;
        }
        state[node] = 2;
        order.push_back(node);
        stack.pop_back();
      }
    };
    for (absl::string_view output : graph_.outputs()) visit(graph_.producer(output, 0));
    for (std::size_t i = 0; i < n_; ++i) {
      if (graph_.node(static_cast<NodeId>(i)).subgraph == 0) visit(static_cast<NodeId>(i));
    }
    for (std::size_t i = 0; i < n_; ++i) {
      if (graph_.node(static_cast<NodeId>(i)).subgraph != 0) order.push_back(static_cast<NodeId>(i));
    }
    return order;
  }

  void BuildBuckets() {
    buckets_.assign(graph_.subgraphs().size(), {});
    for (NodeId i : order_) {
      const int s = graph_.node(i).subgraph;
      if (s >= 0 && static_cast<std::size_t>(s) < buckets_.size()) buckets_[s].push_back(i);
    }
  }

  bool Settled(NodeId i) const { return anchored_[i] || (out_[i].mapped() && out_[i].strategy == Strategy::kStructure); }

  // Producers of the node's inputs that compute something: not
  // initializers, graph inputs (reported through `*from_input`), constants
  // or shape computations.
  template <typename F>
  bool ForComputedInputs(NodeId i, F&& f, bool* from_input = nullptr) const {
    const Node& n = graph_.node(i);
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const absl::string_view v = n.inputs[k];
      if (v.empty() || graph_.initializerOf(n.input_values[k]) != nullptr) continue;
      const NodeId p = graph_.producer(n.input_values[k]);
      if (p == kNoNode) {
        if (from_input != nullptr) *from_input = true;
        continue;
      }
      if (graph_.node(p).inputs.empty() || shape_[p]) continue;
      if (!f(v, p)) return false;
    }
    return true;
  }

  // The nodes between two anchors of different modules, matched with the
  // operations the manifest's forward signatures run there. A node the
  // matching leaves open is left to the rules below.
  std::size_t Signatures(const std::vector<NodeId>& bucket, const ForwardSignatures& signatures) {
    std::size_t matched = 0;
    std::vector<NodeId> gap;
    std::vector<absl::string_view> op_types;
    std::vector<ExpectedOp> expected;
    NodeId last = kNoNode;
    for (const NodeId i : bucket) {
      if (!Settled(i)) {
        if (Candidate(i)) gap.push_back(i);
        continue;
      }
      const ModuleId a = last == kNoNode ? kNoModule : out_[last].module;
      const ModuleId b = out_[i].module;
      last = i;
      if (a != kNoModule && a != b && !gap.empty() && signatures.Between(a, b, &expected)) {
        op_types.clear();
        for (NodeId g : gap) op_types.push_back(graph_.node(g).op_type);
        const std::vector<ModuleId> modules = signatures.Align(op_types, expected);
        for (std::size_t k = 0; k < gap.size(); ++k) {
          if (modules[k] == kNoModule) continue;
          ++matched;
          Assign(gap[k], modules[k], kSignature,
                 absl::StrCat(Named(modules[k]), "'s forward runs this ", op_types[k], " between ",
                              Named(a), " and ", Named(b), " (forward signatures)"));
        }
      }
      gap.clear();
    }
    return matched;
  }

  // A module's path for evidence, "<root>" for the root.
  absl::string_view Named(ModuleId m) const {
    const std::string& path = manifest_.module(m).path;
    return path.empty() ? absl::string_view("<root>") : absl::string_view(path);
  }

  // Head of B: walking backwards, a node all of whose consumers are B's
  // anchors or B's head nodes.
  void Heads(const std::vector<NodeId>& bucket) {
    ModuleId next = kNoModule;
    absl::flat_hash_map<NodeId, ModuleId> head;
    for (std::size_t k = bucket.size(); k-- > 0;) {
      const NodeId i = bucket[k];
      if (anchored_[i]) {
        next = out_[i].module;
        continue;
      }
      // A head runs before the module's first anchor; a module that already
      // ran and is entered again is a join, not a head.
      if (next == kNoModule || library_[next] || !Candidate(i) || first_anchor_[next] < pos_[i]) continue;
      const Node& n = graph_.node(i);
      bool any = false, all = true;
      for (ValueId v : n.output_values) {
        for (NodeId c : graph_.consumers(v)) {
          any = true;
          const bool ok = (anchored_[c] && out_[c].module == next) || (head.contains(c) && head[c] == next);
          if (!ok) all = false;
        }
      }
      if (any && all) {
        head[i] = next;
        Assign(i, next, kHead, absl::StrCat("computes only for ", manifest_.module(next).path,
                                            " (runs before its weights are read)"));
      }
    }
  }

  // Tail of A: a node reading only results of A's anchors or A's tail.
  void Tails(const std::vector<NodeId>& bucket) {
    ModuleId prev = kNoModule;
    absl::flat_hash_map<NodeId, ModuleId> tail;
    for (NodeId i : bucket) {
      if (anchored_[i]) {
        prev = out_[i].module;
        continue;
      }
      if (prev == kNoModule || library_[prev] || !Candidate(i)) continue;
      bool any = false, from_input = false;
      const bool all = ForComputedInputs(
          i,
          [&](absl::string_view, NodeId p) {
            any = true;
            return (anchored_[p] && out_[p].module == prev) || (tail.contains(p) && tail[p] == prev);
          },
          &from_input);
      if (any && all && !from_input) {
        tail[i] = prev;
        Assign(i, prev, kTail, absl::StrCat("reads only results of ", manifest_.module(prev).path));
      }
    }
  }

  // The anchors around each position of a bucket: previous and next
  // settled node (kNoNode at the ends).
  void Neighbours(const std::vector<NodeId>& bucket, std::vector<NodeId>* prev,
                  std::vector<NodeId>* next) const {
    prev->assign(bucket.size(), kNoNode);
    next->assign(bucket.size(), kNoNode);
    NodeId last = kNoNode;
    for (std::size_t k = 0; k < bucket.size(); ++k) {
      (*prev)[k] = last;
      if (Settled(bucket[k])) last = bucket[k];
    }
    last = kNoNode;
    for (std::size_t k = bucket.size(); k-- > 0;) {
      (*next)[k] = last;
      if (Settled(bucket[k])) last = bucket[k];
    }
  }

  // A parameterless module beside the path between A and B (a child of a
  // module on it) whose rule says it produces `op`; deepest on A's side
  // first. kNoModule when none.
  ModuleId ModuleForOp(ModuleId a, ModuleId b, absl::string_view op) const {
    const ModuleId lca = manifest_.lowestCommonAncestor(a, b);
    for (ModuleId side : {a, b}) {
      for (ModuleId c = side; c != kNoModule; c = manifest_.module(c).parent) {
        // Of several such children (one activation module per conv), the
        // one registered between the path's children, else the first after
        // A's, else the first: modules are registered in the order their
        // forward calls them more often than not.
        const ModuleId ca = ChildToward(c, a), cb = ChildToward(c, b);
        ModuleId first = kNoModule, after = kNoModule, between = kNoModule;
        for (ModuleId k : op_children_[c]) {
          if (!Produces(module_ops_[k], op)) continue;
          if (first == kNoModule) first = k;
          if (ca == kNoModule || k < ca) continue;
          if (after == kNoModule) after = k;
          if (between == kNoModule && cb != kNoModule && k < cb) between = k;
        }
        if (first != kNoModule) {
          return between != kNoModule ? between : after != kNoModule ? after : first;
        }
        if (c == lca) break;
      }
    }
    return kNoModule;
  }

  // The child of `parent` on the way down to `module`; kNoModule when
  // `module` is `parent` or not below it.
  ModuleId ChildToward(ModuleId parent, ModuleId module) const {
    for (ModuleId m = module; m != kNoModule; m = manifest_.module(m).parent) {
      if (manifest_.module(m).parent == parent) return m;
    }
    return kNoModule;
  }

  // Rules::moduleProduces, once per (rule, op type).
  bool Produces(int rule, absl::string_view op) const {
    auto key = std::make_pair(rule, op);
    auto it = produces_.find(key);
    if (it == produces_.end()) it = produces_.emplace(key, internal::RuleQueries(rules_).moduleProduces(rule, op)).first;
    return it->second;
  }

  void ModuleOpRegions(const std::vector<NodeId>& bucket) {
    std::vector<NodeId> prev, next;
    Neighbours(bucket, &prev, &next);
    for (std::size_t k = 0; k < bucket.size(); ++k) {
      const NodeId seed = bucket[k];
      if (!Candidate(seed) || prev[k] == kNoNode || next[k] == kNoNode) continue;
      const ModuleId module =
          ModuleForOp(out_[prev[k]].module, out_[next[k]].module, graph_.node(seed).op_type);
      if (module == kNoModule) continue;
      Region(seed, module, prev[k], next[k]);
    }
  }

  // The single-input chain of ops around `seed` (x / sqrt2 -> Erf -> + 1 ->
  // x * ... -> * 0.5), between the anchors `lo` and `hi`.
  void Region(NodeId seed, ModuleId module, NodeId lo, NodeId hi) {
    const std::string evidence =
        absl::StrCat(graph_.node(seed).op_type, " between ", manifest_.module(out_[lo].module).path,
                     " and ", manifest_.module(out_[hi].module).path, ": ",
                     manifest_.module(module).class_name.empty() ? manifest_.module(module).path
                                                                 : manifest_.module(module).class_name);
    auto single_input = [&](NodeId i, absl::string_view* input) {
      int count = 0;
      ForComputedInputs(i, [&](absl::string_view v, NodeId) {
        if (count++ == 0) *input = v;
        return true;
      });
      return count == 1;
    };
    absl::string_view entry;
    if (!single_input(seed, &entry)) return;
    // Backwards: single-input producers used only by the region (collected
    // last first, then put in order).
    std::vector<NodeId> region = {seed};
    for (;;) {
      const Node& first = graph_.node(region.back());
      const NodeId p = graph_.producer(entry, first.subgraph);
      absl::string_view before;
      if (p == kNoNode || pos_[p] <= pos_[lo] || !Candidate(p) || !single_input(p, &before)) break;
      if (graph_.consumers(entry, first.subgraph).size() != 1) break;
      region.push_back(p);
      entry = before;
    }
    std::reverse(region.begin(), region.end());
    absl::flat_hash_set<absl::string_view> values = {entry};
    absl::flat_hash_set<NodeId> members(region.begin(), region.end());
    for (NodeId r : region) {
      for (absl::string_view o : graph_.node(r).outputs) values.insert(o);
    }
    // Forwards: consumers reading only the region's values.
    for (std::size_t q = 0; q < region.size(); ++q) {
      const Node& n = graph_.node(region[q]);
      for (absl::string_view o : n.outputs) {
        if (o.empty()) continue;
        for (NodeId c : graph_.consumers(o, n.subgraph)) {
          if (members.contains(c) || pos_[c] >= pos_[hi] || !Candidate(c)) continue;
          const bool inside = ForComputedInputs(c, [&](absl::string_view v, NodeId) {
            return values.contains(v);
          });
          if (!inside) continue;
          members.insert(c);
          region.push_back(c);
          for (absl::string_view co : graph_.node(c).outputs) values.insert(co);
        }
      }
    }
    for (NodeId r : region) Assign(r, module, kModuleOps, evidence);
  }

  // First settled node of each module's subtree.
  void ComputeStarts() {
    start_.assign(manifest_.size(), n_);
    for (NodeId i : order_) {
      if (!Settled(i)) continue;
      for (ModuleId m = out_[i].module; m != kNoModule && start_[m] > pos_[i];
           m = manifest_.module(m).parent) {
        start_[m] = pos_[i];
      }
    }
  }

  // True when every value `i` reads was produced inside `module`'s interval
  // or was already read there before `i` (the module received it).
  bool Available(NodeId i, ModuleId module) const {
    const std::size_t begin = start_[module];
    if (begin >= pos_[i]) return false;
    const int subgraph = graph_.node(i).subgraph;
    bool from_input = false;
    const bool ok = ForComputedInputs(
        i,
        [&](absl::string_view v, NodeId p) {
          if (pos_[p] >= begin) return true;
          // Bounded: a value read by very many nodes is not looked through.
          const auto consumers = graph_.consumers(v, subgraph);
          if (consumers.size() > kMaxConsumerScan) return false;
          for (NodeId c : consumers) {
            if (pos_[c] >= begin && pos_[c] < pos_[i]) return true;
          }
          return false;
        },
        &from_input);
    return ok && !from_input;
  }

  void Intervals(const std::vector<NodeId>& bucket) {
    std::vector<NodeId> prev, next;
    Neighbours(bucket, &prev, &next);
    for (std::size_t k = 0; k < bucket.size(); ++k) {
      const NodeId i = bucket[k];
      if (!Candidate(i) || prev[k] == kNoNode || next[k] == kNoNode) continue;
      const ModuleId a = out_[prev[k]].module;
      const ModuleId b = out_[next[k]].module;
      const std::string& pa = manifest_.module(a).path;
      if (a == b) {
        Assign(i, a, kInterval, absl::StrCat("between two nodes of ", pa));
        continue;
      }
      const ModuleId lca = manifest_.lowestCommonAncestor(a, b);
      ModuleId found = kNoModule;
      for (ModuleId m = a; m != kNoModule && m != lca; m = manifest_.module(m).parent) {
        if (!library_[m] && Available(i, m)) {
          found = m;
          break;
        }
      }
      if (found != kNoModule) {
        Assign(i, found, kInterval,
               absl::StrCat("after ", pa, ", inside ", manifest_.module(found).path,
                            " (reads only values it holds)"));
        continue;
      }
      ModuleId owner = lca;
      while (owner != kNoModule && library_[owner] && manifest_.module(owner).parent != kNoModule) {
        owner = manifest_.module(owner).parent;
      }
      Assign(i, owner, kLca, absl::StrCat("between ", Named(a), " and ", Named(b), " in execution order"));
    }
  }

  const Graph& graph_;
  const Manifest& manifest_;
  const Rules& rules_;
  const OpTraits& ops_;
  const TensorEvidence& tensors_;
  const std::vector<bool>& shape_;
  std::vector<MappingRecord>& out_;
  EvidenceStore* evidence_;
  const std::size_t n_;
  std::vector<bool> library_;
  std::vector<int> module_ops_;
  std::vector<bool> params_below_;
  // Per module: its parameterless children that a module_ops rule names.
  std::vector<std::vector<ModuleId>> op_children_;
  mutable absl::flat_hash_map<std::pair<int, absl::string_view>, bool> produces_;
  std::vector<bool> anchored_;
  std::vector<NodeId> order_;      // nodes in the order used
  std::vector<std::size_t> pos_;   // node -> index in order_
  std::vector<std::vector<NodeId>> buckets_;
  std::vector<std::size_t> start_;
  std::vector<std::size_t> first_anchor_;  // per module, in order_
  double factor_ = 1.0;
};

}  // namespace

StructureCounts InferFromStructure(const MappingContext& context, const std::vector<bool>& shape) {
  const Graph& graph = context.graph;
  const Manifest& manifest = context.manifest;
  const Rules& rules = context.rules;
  const OpTraits& ops = context.ops;
  const TensorEvidence& tensors = context.tensors;
  std::vector<MappingRecord>* mappings = &context.records;
  EvidenceStore* evidence = &context.evidence;
  // Only some nodes carry a creation counter (those the exporter created
  // itself; the others sort after their latest producer), so the order it
  // gives can be worse than the file's. With forward signatures, the order
  // whose gaps they explain better is kept; a tie keeps the counters'.
  if (!ForwardSignatures(manifest, rules).available()) {
    return Structure(graph, manifest, rules, ops, tensors, shape, mappings, evidence).Run(true);
  }
  std::vector<MappingRecord> file = *mappings;
  const StructureCounts counts =
      Structure(graph, manifest, rules, ops, tensors, shape, mappings, evidence).Run(true);
  if (!counts.creation_order || counts.signature_matches == 0) return counts;
  const StructureCounts in_file =
      Structure(graph, manifest, rules, ops, tensors, shape, &file, evidence).Run(false);
  if (in_file.signature_matches <= counts.signature_matches) return counts;
  *mappings = std::move(file);
  return in_file;
}

}  // namespace internal
}  // namespace semmap
