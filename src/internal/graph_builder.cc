#include "internal/graph_builder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "internal/file_io.h"
#include "internal/parallel.h"

namespace semmap {
namespace internal {

GraphBuilder::GraphBuilder(absl::string_view origin, const GraphOptions& options,
                           std::shared_ptr<const void> backing, bool durable)
    : origin_(origin), options_(options), durable_(durable), rep_(std::make_shared<Graph::Rep>()) {
  rep_->backing = std::move(backing);
}

absl::string_view GraphBuilder::Keep(absl::string_view s) {
  if (durable_ || s.empty()) return s;
  rep_->owned.emplace_back(s.data(), s.size());
  return rep_->owned.back();
}

void GraphBuilder::SetModelInfo(std::int64_t ir_version, absl::string_view producer_name,
                                absl::string_view producer_version, std::int64_t opset) {
  rep_->ir_version = ir_version;
  rep_->producer_name = Keep(producer_name);
  rep_->producer_version = Keep(producer_version);
  rep_->opset = opset;
}

void GraphBuilder::AddModelMetadata(absl::string_view key, absl::string_view value) {
  rep_->model_metadata.emplace_back(Keep(key), Keep(value));
}

absl::Status OpsetOutOfRange(absl::string_view origin, std::int64_t version) {
  return absl::InvalidArgumentError(absl::StrCat(
      origin, ": opset_import version ", version, " is out of range (not a valid ONNX model)"));
}

absl::Status GraphBuilder::Charge(std::size_t n) {
  list_entries_ += n;
  if (list_entries_ > options_.max_list_entries) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": more than ", options_.max_list_entries,
        " inputs, outputs, attributes, metadata entries and dims (GraphOptions::max_list_entries)"));
  }
  return absl::OkStatus();
}

absl::Status GraphBuilder::AddMainInput(absl::string_view name) {
  if (absl::Status s = Charge(1); !s.ok()) return s;
  rep_->inputs.push_back(Keep(name));
  return absl::OkStatus();
}

absl::Status GraphBuilder::AddMainOutput(absl::string_view name) {
  if (absl::Status s = Charge(1); !s.ok()) return s;
  rep_->outputs.push_back(Keep(name));
  return absl::OkStatus();
}

absl::Status GraphBuilder::DefineValue(int subgraph, absl::string_view name) {
  if (absl::Status s = Charge(1); !s.ok()) return s;
  rep_->defined_values.emplace_back(subgraph, Keep(name));
  return absl::OkStatus();
}

absl::Status GraphBuilder::AddInitializer(absl::string_view name, std::int32_t elem_type,
                                          absl::Span<const std::int64_t> dims, bool external,
                                          int subgraph) {
  if (absl::Status s = Charge(1 + dims.size()); !s.ok()) return s;
  TensorInfo info;
  info.name = Keep(name);
  info.elem_type = elem_type;
  info.external = external;
  info.subgraph = subgraph;
  // The span is laid out in Finish; until then its size says how many of
  // `dims` are this tensor's, in order.
  info.dims = absl::Span<const std::int64_t>(nullptr, dims.size());
  rep_->dims.insert(rep_->dims.end(), dims.begin(), dims.end());
  rep_->initializers.push_back(info);
  return absl::OkStatus();
}

absl::Status GraphBuilder::CheckNesting(int parent) const {
  if (rep_->subgraphs[static_cast<std::size_t>(parent)].depth + 1 > options_.max_subgraph_depth) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": subgraphs nested deeper than ", options_.max_subgraph_depth,
        " levels (GraphOptions::max_subgraph_depth)"));
  }
  return absl::OkStatus();
}

int GraphBuilder::AddSubgraph(Subgraph s) {
  if (s.kind == Subgraph::Kind::kAttribute) {
    s.depth = rep_->subgraphs[static_cast<std::size_t>(s.parent)].depth + 1;
  }
  s.name = Keep(s.name);
  s.attribute = Keep(s.attribute);
  s.domain = Keep(s.domain);
  rep_->subgraphs.push_back(s);
  return static_cast<int>(rep_->subgraphs.size()) - 1;
}

absl::Status GraphBuilder::AddNode(int subgraph, const NodeFields& f, NodeId* id) {
  std::vector<Node>& nodes = rep_->nodes;
  if (nodes.size() >= options_.max_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": more than ", options_.max_nodes, " nodes (GraphOptions::max_nodes)"));
  }
  std::size_t longest = std::max(f.name.size(), f.op_type.size());
  for (absl::string_view v : f.inputs) longest = std::max(longest, v.size());
  for (absl::string_view v : f.outputs) longest = std::max(longest, v.size());
  if (longest > options_.max_name_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": node ", nodes.size(), " (", Abbreviate(f.name, 80), ") has a name of ",
        longest, " bytes, above the limit of ", options_.max_name_bytes,
        " (GraphOptions::max_name_bytes)"));
  }
  *id = static_cast<NodeId>(nodes.size());
  Node& n = nodes.emplace_back();
  n.subgraph = subgraph;
  n.name = Keep(f.name);
  n.op_type = Keep(f.op_type);
  n.domain = Keep(f.domain);
  n.doc_string = Keep(f.doc_string);

  ListOffsets& o = lists_.emplace_back();
  std::vector<absl::string_view>& strings = rep_->node_strings;
  o.strings = strings.size();
  o.inputs = static_cast<std::uint32_t>(f.inputs.size());
  o.outputs = static_cast<std::uint32_t>(f.outputs.size());
  o.attributes = static_cast<std::uint32_t>(f.attribute_names.size());
  for (absl::string_view v : f.inputs) strings.push_back(Keep(v));
  for (absl::string_view v : f.outputs) strings.push_back(Keep(v));
  for (absl::string_view v : f.attribute_names) strings.push_back(Keep(v));
  o.metadata = rep_->node_metadata.size();
  o.metadata_count = static_cast<std::uint32_t>(f.metadata.size());
  for (const MetadataEntry& kv : f.metadata) {
    rep_->node_metadata.emplace_back(Keep(kv.first), Keep(kv.second));
  }
  return absl::OkStatus();
}

void GraphBuilder::AssignIds() {
  std::vector<Node>& nodes = rep_->nodes;
  // A name is its node's id when non-empty and unique in the model; the
  // by-id index is built on the way (one hash probe per node).
  auto& by_id = rep_->by_id;
  by_id.reserve(nodes.size());
  std::vector<bool> duplicate(nodes.size(), false);
  bool any_duplicate = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const absl::string_view name = nodes[i].name;
    if (name.empty()) {
      any_duplicate = true;
      continue;
    }
    auto inserted = by_id.try_emplace(name, static_cast<NodeId>(i));
    if (!inserted.second) {
      duplicate[static_cast<std::size_t>(inserted.first->second)] = true;
      duplicate[i] = true;
      any_duplicate = true;
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i].id = nodes[i].name;
  if (!any_duplicate) return;
  // Duplicated and empty names leave the index; their nodes get
  // "<name>#<index>". Such an id can only collide with another node's unique
  // name ("a#3" named so on purpose): the name keeps it and the generated id
  // takes '#' suffixes until it is free.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (duplicate[i]) by_id.erase(nodes[i].name);
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    if (!n.name.empty() && !duplicate[i]) continue;
    std::string id = absl::StrCat(n.name, "#", i);
    while (by_id.contains(id)) id.push_back('#');
    rep_->owned.push_back(std::move(id));
    n.id = rep_->owned.back();
    by_id.emplace(n.id, static_cast<NodeId>(i));
  }
}

Graph GraphBuilder::Finish() {
  Graph::Rep& rep = *rep_;
  rep.node_values.assign(rep.node_strings.size(), kNoValue);
  for (std::size_t i = 0; i < rep.nodes.size(); ++i) {
    Node& n = rep.nodes[i];
    const ListOffsets& o = lists_[i];
    const absl::string_view* s = rep.node_strings.data() + o.strings;
    const ValueId* v = rep.node_values.data() + o.strings;
    n.inputs = absl::MakeConstSpan(s, o.inputs);
    n.input_values = absl::MakeConstSpan(v, o.inputs);
    n.outputs = absl::MakeConstSpan(s + o.inputs, o.outputs);
    n.output_values = absl::MakeConstSpan(v + o.inputs, o.outputs);
    n.attribute_names = absl::MakeConstSpan(s + o.inputs + o.outputs, o.attributes);
    n.metadata = absl::MakeConstSpan(rep.node_metadata.data() + o.metadata, o.metadata_count);
  }
  std::vector<ListOffsets>().swap(lists_);
  std::size_t dims = 0;
  for (TensorInfo& t : rep.initializers) {
    const std::size_t count = t.dims.size();
    t.dims = absl::MakeConstSpan(rep.dims.data() + dims, count);
    dims += count;
  }
  BuildIndexes();
  return Graph(std::move(rep_));
}

// Node ids and the value table are independent (AssignIds writes the
// nodes' ids and the by-id index; DefineValues reads the nodes' outputs and
// writes the value tables), so on a large graph they run on two cores.
void GraphBuilder::BuildIndexes() {
  const bool parallel = rep_->nodes.size() >= kParallelNodes;
  RunBoth(parallel, [this] { AssignIds(); }, [this] { DefineValues(); });
  IndexConsumers();
}

void GraphBuilder::DefineValues() {
  Graph::Rep& rep = *rep_;
  std::vector<Node>& nodes = rep.nodes;
  std::vector<ValueId>& node_values = rep.node_values;
  std::size_t outputs = 0;
  for (const Node& n : nodes) outputs += n.outputs.size();
  const std::size_t expected = outputs + rep.initializers.size() + rep.defined_values.size();
  rep.values.reserve(expected);
  rep.value_producer.reserve(expected);
  rep.value_names.reserve(expected);
  auto offset_of = [&node_values](const ValueId* p) {
    return static_cast<std::size_t>(p - node_values.data());
  };
  // Defines `name` in `scope`; the first definition wins.
  auto define = [&rep](int scope, absl::string_view name, NodeId producer) {
    const auto next = static_cast<ValueId>(rep.value_producer.size());
    auto inserted = rep.values.try_emplace(Graph::ScopedName{scope, name}, next);
    if (inserted.second) {
      rep.value_producer.push_back(producer);
      rep.value_names.push_back(name);
    }
    return inserted.first->second;
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    const std::size_t base = offset_of(n.output_values.data());
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      node_values[base + k] = define(n.subgraph, n.outputs[k], static_cast<NodeId>(i));
    }
  }
  std::size_t initializer_index = 0;
  rep.value_initializer.assign(rep.value_producer.size(), -1);
  for (const TensorInfo& t : rep.initializers) {
    const ValueId v = define(t.subgraph, t.name, kNoNode);
    if (static_cast<std::size_t>(v) >= rep.value_initializer.size()) {
      rep.value_initializer.resize(static_cast<std::size_t>(v) + 1, -1);
      rep.value_initializer[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(initializer_index);
    }
    if (t.subgraph == 0) rep.initializer_index.emplace(t.name, initializer_index);
    ++initializer_index;
  }
  for (const auto& value : rep.defined_values) define(value.first, value.second, kNoNode);
  rep.value_initializer.resize(rep.value_producer.size(), -1);
}

void GraphBuilder::IndexConsumers() {
  Graph::Rep& rep = *rep_;
  std::vector<Node>& nodes = rep.nodes;
  std::vector<ValueId>& node_values = rep.node_values;
  const std::vector<Subgraph>& subgraphs = rep.subgraphs;
  std::size_t inputs = 0;
  for (const Node& n : nodes) inputs += n.inputs.size();
  auto offset_of = [&node_values](const ValueId* p) {
    return static_cast<std::size_t>(p - node_values.data());
  };
  // (value, consumer) pairs in node order, then grouped by value (counting
  // sort), sorted and de-duplicated per value. The lookups only read the
  // value table, and each node writes its own input ids, so on a large
  // graph the two halves of the nodes are resolved on two cores.
  using Uses = std::vector<std::pair<std::uint32_t, NodeId>>;
  auto resolve = [&](std::size_t from, std::size_t to, Uses* uses) {
    for (std::size_t i = from; i < to; ++i) {
      const Node& n = nodes[i];
      const std::size_t base = offset_of(n.input_values.data());
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k].empty()) continue;
        int scope = -1;
        const ValueId value = Graph::Resolve(rep, n.inputs[k], n.subgraph, &scope);
        if (value < 0) continue;
        node_values[base + k] = value;
        uses->emplace_back(static_cast<std::uint32_t>(value), static_cast<NodeId>(i));
        // An outer value used inside a subgraph is consumed by every owner
        // between the use and the definition.
        for (int s = n.subgraph; s != scope && s > 0;) {
          const Subgraph& sub = subgraphs[static_cast<std::size_t>(s)];
          if (sub.kind != Subgraph::Kind::kAttribute) break;
          uses->emplace_back(static_cast<std::uint32_t>(value), sub.owner);
          s = sub.parent;
        }
      }
    }
  };
  const std::size_t mid = nodes.size() / 2;
  Uses uses, second_half;
  uses.reserve(inputs);
  RunBoth(nodes.size() >= kParallelNodes, [&] { resolve(mid, nodes.size(), &second_half); },
          [&] { resolve(0, mid, &uses); });
  uses.insert(uses.end(), second_half.begin(), second_half.end());
  Uses().swap(second_half);
  const std::size_t count = rep.value_producer.size();
  std::vector<std::uint32_t> begin(count + 1, 0);
  for (const auto& use : uses) ++begin[use.first + 1];
  for (std::size_t v = 0; v < count; ++v) begin[v + 1] += begin[v];
  std::vector<NodeId>& consumer_nodes = rep.consumer_nodes;
  consumer_nodes.resize(uses.size());
  {
    std::vector<std::uint32_t> fill(begin.begin(), begin.end() - 1);
    for (const auto& use : uses) consumer_nodes[fill[use.first]++] = use.second;
  }
  std::vector<std::pair<std::uint32_t, NodeId>>().swap(uses);
  rep.consumer_offsets.assign(count + 1, 0);
  std::uint32_t out = 0;
  for (std::size_t v = 0; v < count; ++v) {
    auto first = consumer_nodes.begin() + begin[v];
    auto last = consumer_nodes.begin() + begin[v + 1];
    if (!std::is_sorted(first, last)) std::sort(first, last);
    last = std::unique(first, last);
    rep.consumer_offsets[v] = out;
    for (auto it = first; it != last; ++it) consumer_nodes[out++] = *it;
  }
  rep.consumer_offsets[count] = out;
  consumer_nodes.resize(out);
  consumer_nodes.shrink_to_fit();
}

}  // namespace internal
}  // namespace semmap
