// GraphBuilder, second half: the indexes Finish() builds over the stored
// records (node ids and the by-id index, the value table, consumers by
// value), on two cores for a large graph. The first half (graph_builder.cc)
// stores what the loaders read.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/huge_pages.h"
#include "base/name_table.h"
#include "base/parallel.h"
#include "base/text.h"
#include "graph/graph_builder.h"

namespace semmap {
namespace internal {

void GraphBuilder::AssignIds() {
  auto& nodes = rep_->nodes;
  // A name is its node's id (a record's id is -1 until told otherwise) when
  // non-empty and unique in the model; the by-id index is built on the way
  // (one probe per node). A repeated name's slot is marked erased: it leaves
  // the index.
  using Slot = NameSlot;
  std::vector<Slot>& by_id = rep_->by_id;
  const IdKeys key{*rep_};
  InitNameTable(&by_id, NameTableCapacity(nodes.size()));
  bool any_duplicate = false;
  std::uint64_t hashes[kNameBatch];
  for (std::size_t first = 0; first < nodes.size(); first += kNameBatch) {
    const std::size_t last = std::min(nodes.size(), first + kNameBatch);
    for (std::size_t i = first; i < last; ++i) {
      hashes[i - first] = ScopedHash(name_hashes_[i], 0);
      PrefetchName(absl::Span<const Slot>(by_id), hashes[i - first]);
    }
    for (std::size_t i = first; i < last; ++i) {
      const absl::string_view name = nodes[i].nameView();
      if (name.empty()) {
        any_duplicate = true;
        continue;
      }
      Slot* slot = InsertName(absl::MakeSpan(by_id), hashes[i - first], 0, name, key);
      if (slot->index == kFreeSlot) {
        slot->index = static_cast<NodeId>(i);
      } else {
        // Erased, still named by the first node with the name.
        if (slot->index >= 0) slot->index = ErasedSlot(slot->index);
        any_duplicate = true;
      }
    }
  }
  if (!any_duplicate) return;
  // Duplicated and empty names get "<name>#<index>". Such an id can only
  // collide with another node's unique name ("a#3" named so on purpose): the
  // name keeps it and the generated id takes '#' suffixes until it is free.
  // Each node adds at most one id: room for twice as many keys.
  ResizeNameTable(&by_id, NameTableCapacity(2 * nodes.size()), key);
  auto live = [&by_id, &key](absl::string_view id, std::uint64_t hash) {
    const Slot* slot = FindName(absl::Span<const Slot>(by_id), hash, 0, id, key);
    return slot != nullptr && slot->index >= 0;
  };
  // Which nodes take a generated id is decided before any is inserted: a
  // generated id may equal a repeated name and revive its slot.
  std::vector<NodeId> generated;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const absl::string_view name = nodes[i].nameView();
    const Slot* slot =
        name.empty()
            ? nullptr
            : FindName(absl::Span<const Slot>(by_id), ScopedHash(NameHash(name), 0), 0, name, key);
    if (slot == nullptr || IsErased(slot->index)) generated.push_back(static_cast<NodeId>(i));
  }
  rep_->generated_ids.reserve(generated.size());
  for (const NodeId i : generated) {
    NodeRecord& n = nodes[static_cast<std::size_t>(i)];
    std::string id = absl::StrCat(n.nameView(), "#", i);
    std::uint64_t hash = ScopedHash(NameHash(id), 0);
    while (live(id, hash)) {
      id.push_back('#');
      hash = ScopedHash(NameHash(id), 0);
    }
    rep_->owned.push_back(std::move(id));
    n.id = static_cast<std::int32_t>(rep_->generated_ids.size());
    rep_->generated_ids.push_back(rep_->owned.back());
    // A free slot, or the erased slot of a repeated name equal to the id:
    // either now names node i by its id.
    Slot* slot = InsertName(absl::MakeSpan(by_id), hash, 0, rep_->generated_ids.back(), key);
    slot->index = i;
  }
}

// Node ids and the value table are independent (AssignIds writes the
// records' `id` and the by-id index; DefineValues reads the records' lists
// and writes the value tables), so on a large graph they run on two cores.
void GraphBuilder::BuildIndexes() {
  // AddNode and AppendBatches hash every name they store; should a way of
  // adding nodes not, the names are hashed here.
  if (name_hashes_.size() != rep_->nodes.size() ||
      string_hashes_.size() != rep_->node_strings.size()) {
    HashNames();
  }
  const bool parallel = rep_->nodes.size() >= kParallelNodes;
  RunBoth(parallel, [this] { AssignIds(); }, [this] { DefineValues(); });
  IndexConsumers();
  decltype(name_hashes_)().swap(name_hashes_);
  decltype(string_hashes_)().swap(string_hashes_);
}

void GraphBuilder::HashNames() {
  const auto& nodes = rep_->nodes;
  const auto& strings = rep_->node_strings;
  name_hashes_.resize(nodes.size());
  string_hashes_.resize(strings.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) name_hashes_[i] = NameHash(nodes[i].nameView());
  for (std::size_t k = 0; k < strings.size(); ++k) string_hashes_[k] = NameHash(strings[k]);
}

void GraphBuilder::DefineValues() {
  GraphRep& rep = *rep_;
  const auto& nodes = rep.nodes;
  const absl::string_view* strings = rep.node_strings.data();
  ValueId* node_values = rep.node_values.data();
  const std::size_t expected = outputs_ + rep.initializers.size() + rep.defined_values.size();
  using Slot = NameSlot;
  InitNameTable(&rep.values, NameTableCapacity(expected));
  const absl::Span<Slot> table = absl::MakeSpan(rep.values);
  rep.value_producer.reserve(expected);
  rep.value_names.reserve(expected);
  // Defines `name` in `scope`; the first definition wins.
  const ValueKeys key{rep};
  auto define = [&rep, table, &key](int scope, absl::string_view name, std::uint64_t hash,
                                    NodeId producer) {
    Slot* slot = InsertName(table, hash, scope, name, key);
    if (slot->index == kFreeSlot) {
      slot->index = static_cast<ValueId>(rep.value_producer.size());
      rep.value_producer.push_back(producer);
      rep.value_names.push_back(name);
    }
    return slot->index;
  };
  // The outputs of a batch of nodes are hashed and their slots prefetched,
  // then defined.
  std::vector<std::uint64_t> hashes;
  for (std::size_t first = 0; first < nodes.size(); first += kNameBatch) {
    const std::size_t last = std::min(nodes.size(), first + kNameBatch);
    hashes.clear();
    for (std::size_t i = first; i < last; ++i) {
      const NodeRecord& o = nodes[i];
      const std::size_t base = o.strings + o.inputs;
      for (std::size_t k = base; k < base + o.outputs; ++k) {
        hashes.push_back(ScopedHash(string_hashes_[k], o.subgraph));
        PrefetchName(absl::Span<const Slot>(table), hashes.back());
      }
    }
    const std::uint64_t* hash = hashes.data();
    for (std::size_t i = first; i < last; ++i) {
      const NodeRecord& o = nodes[i];
      const std::size_t base = o.strings + o.inputs;
      for (std::size_t k = base; k < base + o.outputs; ++k, ++hash) {
        if (strings[k].empty()) continue;
        node_values[k] = define(o.subgraph, strings[k], *hash, static_cast<NodeId>(i));
      }
    }
  }
  // Initializers likewise, in batches (their names lie all over the file).
  const std::vector<TensorInfo>& initializers = rep.initializers;
  rep.value_initializer.assign(rep.value_producer.size() + initializers.size(), -1);
  rep.initializer_index.reserve(initializers.size());
  for (std::size_t first = 0; first < initializers.size(); first += kNameBatch) {
    const std::size_t last = std::min(initializers.size(), first + kNameBatch);
    hashes.clear();
    for (std::size_t i = first; i < last; ++i) {
      hashes.push_back(ScopedHash(NameHash(initializers[i].name), initializers[i].subgraph));
      PrefetchName(absl::Span<const Slot>(table), hashes.back());
    }
    for (std::size_t i = first; i < last; ++i) {
      const TensorInfo& t = initializers[i];
      const auto next = static_cast<ValueId>(rep.value_producer.size());
      const ValueId v = define(t.subgraph, t.name, hashes[i - first], kNoNode);
      // The first definition of a name wins: an initializer defines it when
      // it was not defined before.
      if (v == next) rep.value_initializer[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(i);
      if (t.subgraph == 0) rep.initializer_index.emplace(t.name, i);
    }
  }
  for (const auto& value : rep.defined_values) {
    define(value.first, value.second, ScopedHash(NameHash(value.second), value.first), kNoNode);
  }
  rep.value_initializer.resize(rep.value_producer.size(), -1);
}

namespace {

// Lays out the consumers of each value from (value, consumer) pairs in node
// order: grouped by value (counting sort), each group sorted and without
// repeats, as rep->consumer_offsets and consumer_nodes.
void GroupConsumers(std::vector<std::pair<std::uint32_t, NodeId>> uses, GraphRep* rep_out) {
  GraphRep& rep = *rep_out;
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

}  // namespace

void GraphBuilder::IndexConsumers() {
  GraphRep& rep = *rep_;
  const auto& nodes = rep.nodes;
  const absl::string_view* strings = rep.node_strings.data();
  ValueId* node_values = rep.node_values.data();
  const std::vector<Subgraph>& subgraphs = rep.subgraphs;
  // (value, consumer) pairs in node order, then grouped by value (counting
  // sort), sorted and de-duplicated per value. The lookups only read the
  // value table, and each node writes its own input ids, so on a large
  // graph the two halves of the nodes are resolved on two cores.
  using Uses = std::vector<std::pair<std::uint32_t, NodeId>>;
  const absl::Span<const NameSlot> table(rep.values);
  // The uses of node i's inputs, given their NameHash in `hash`.
  auto resolve_node = [&](std::size_t i, const std::uint64_t* hash, Uses* uses) {
    const NodeRecord& o = nodes[i];
    for (std::size_t k = o.strings; k < o.strings + o.inputs; ++k, ++hash) {
      const absl::string_view input = strings[k];
      if (input.empty()) continue;
      int scope = -1;
      const ValueId value = ResolveValue(rep, input, *hash, o.subgraph, &scope);
      if (value < 0) continue;
      node_values[k] = value;
      uses->emplace_back(static_cast<std::uint32_t>(value), static_cast<NodeId>(i));
      // An outer value used inside a subgraph is consumed by every owner
      // between the use and the definition.
      for (int s = o.subgraph; s != scope && s > 0;) {
        const Subgraph& sub = subgraphs[static_cast<std::size_t>(s)];
        if (sub.kind != Subgraph::Kind::kAttribute) break;
        uses->emplace_back(static_cast<std::uint32_t>(value), sub.owner);
        s = sub.parent;
      }
    }
  };
  // The inputs of a batch of nodes are hashed and the slots of their own
  // scope prefetched, then resolved.
  auto resolve = [&](std::size_t from, std::size_t to, Uses* uses) {
    std::vector<std::uint64_t> hashes;
    for (std::size_t first = from; first < to; first += kNameBatch) {
      const std::size_t last = std::min(to, first + kNameBatch);
      hashes.clear();
      for (std::size_t i = first; i < last; ++i) {
        const NodeRecord& o = nodes[i];
        for (std::size_t k = o.strings; k < o.strings + o.inputs; ++k) {
          hashes.push_back(string_hashes_[k]);
          PrefetchName(table, ScopedHash(hashes.back(), o.subgraph));
        }
      }
      const std::uint64_t* hash = hashes.data();
      for (std::size_t i = first; i < last; ++i) {
        resolve_node(i, hash, uses);
        hash += nodes[i].inputs;
      }
    }
  };
  const std::size_t count_nodes = nodes.size();
  const std::size_t mid = count_nodes / 2;
  Uses uses, second_half;
  uses.reserve(inputs_);
  RunBoth(count_nodes >= kParallelNodes, [&] { resolve(mid, count_nodes, &second_half); },
          [&] { resolve(0, mid, &uses); });
  uses.insert(uses.end(), second_half.begin(), second_half.end());
  Uses().swap(second_half);
  GroupConsumers(std::move(uses), &rep);
}

}  // namespace internal
}  // namespace semmap
