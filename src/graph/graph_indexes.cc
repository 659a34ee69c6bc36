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
  RunBoth(
      parallel,
      [this] {
        HashInitializers();
        AssignIds();
        IndexInitializers();
      },
      [this] { DefineOutputValues(); });
  DefineOtherValues();
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

ValueId GraphBuilder::AddValue(int scope, absl::string_view name, std::uint64_t hash,
                               NodeId producer) {
  GraphRep& rep = *rep_;
  NameSlot* slot = InsertName(absl::MakeSpan(rep.values), hash, scope, name, ValueKeys{rep});
  if (slot->index == kFreeSlot) {
    slot->index = static_cast<ValueId>(rep.value_producer.size());
    rep.value_producer.push_back(producer);
    rep.value_names.push_back(name);
  }
  return slot->index;
}

void GraphBuilder::DefineOutputValues() {
  GraphRep& rep = *rep_;
  const auto& nodes = rep.nodes;
  const absl::string_view* strings = rep.node_strings.data();
  ValueId* node_values = rep.node_values.data();
  const std::size_t expected = outputs_ + rep.initializers.size() + rep.defined_values.size();
  InitNameTable(&rep.values, NameTableCapacity(expected));
  const absl::Span<const NameSlot> table(rep.values);
  rep.value_producer.reserve(expected);
  rep.value_names.reserve(expected);
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
        PrefetchName(table, hashes.back());
      }
    }
    const std::uint64_t* hash = hashes.data();
    for (std::size_t i = first; i < last; ++i) {
      const NodeRecord& o = nodes[i];
      const std::size_t base = o.strings + o.inputs;
      for (std::size_t k = base; k < base + o.outputs; ++k, ++hash) {
        if (strings[k].empty()) continue;
        node_values[k] = AddValue(o.subgraph, strings[k], *hash, static_cast<NodeId>(i));
      }
    }
  }
}

void GraphBuilder::HashInitializers() {
  const std::vector<TensorInfo>& initializers = rep_->initializers;
  initializer_hashes_.resize(initializers.size());
  for (std::size_t i = 0; i < initializers.size(); ++i) {
    initializer_hashes_[i] = ScopedHash(NameHash(initializers[i].name), initializers[i].subgraph);
  }
}

void GraphBuilder::IndexInitializers() {
  const std::vector<TensorInfo>& initializers = rep_->initializers;
  rep_->initializer_index.reserve(initializers.size());
  for (std::size_t i = 0; i < initializers.size(); ++i) {
    if (initializers[i].subgraph == 0) rep_->initializer_index.emplace(initializers[i].name, i);
  }
}

void GraphBuilder::DefineOtherValues() {
  GraphRep& rep = *rep_;
  const std::vector<TensorInfo>& initializers = rep.initializers;
  const absl::Span<const NameSlot> table(rep.values);
  rep.value_initializer.assign(rep.value_producer.size() + initializers.size(), -1);
  // In batches, as the outputs: their slots prefetched, then defined.
  for (std::size_t first = 0; first < initializers.size(); first += kNameBatch) {
    const std::size_t last = std::min(initializers.size(), first + kNameBatch);
    for (std::size_t i = first; i < last; ++i) PrefetchName(table, initializer_hashes_[i]);
    for (std::size_t i = first; i < last; ++i) {
      const TensorInfo& t = initializers[i];
      const auto next = static_cast<ValueId>(rep.value_producer.size());
      const ValueId v = AddValue(t.subgraph, t.name, initializer_hashes_[i], kNoNode);
      // The first definition of a name wins: an initializer defines it when
      // it was not defined before.
      if (v == next) rep.value_initializer[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(i);
    }
  }
  for (const auto& value : rep.defined_values) {
    AddValue(value.first, value.second, ScopedHash(NameHash(value.second), value.first), kNoNode);
  }
  rep.value_initializer.resize(rep.value_producer.size(), -1);
  decltype(initializer_hashes_)().swap(initializer_hashes_);
}

// The consumers one share of the nodes gives each value (IndexConsumers):
// how many per value (then where its next one goes in consumer_nodes), and
// those that are the owners of subgraphs (an outer value read inside a
// body is consumed by every owner between the use and the definition).
struct ConsumerShare {
  std::size_t from = 0, to = 0;  // nodes [from, to)
  std::vector<std::uint32_t> next;
  std::vector<std::pair<ValueId, NodeId>> owners;
};

namespace {

// Sorts each value's consumers and drops repeats (a node reading a value
// twice), closing up consumer_nodes; `rep.consumer_offsets[v]` is where
// value v's consumers begin before, and after.
void CompactConsumers(GraphRep* rep_out) {
  GraphRep& rep = *rep_out;
  std::vector<NodeId>& consumer_nodes = rep.consumer_nodes;
  std::vector<std::uint32_t>& offsets = rep.consumer_offsets;
  std::uint32_t out = 0;
  for (std::size_t v = 0; v + 1 < offsets.size(); ++v) {
    auto first = consumer_nodes.begin() + offsets[v];
    auto last = consumer_nodes.begin() + offsets[v + 1];
    if (!std::is_sorted(first, last)) std::sort(first, last);
    last = std::unique(first, last);
    offsets[v] = out;
    if (consumer_nodes.begin() + out != first) std::copy(first, last, consumer_nodes.begin() + out);
    out += static_cast<std::uint32_t>(last - first);
  }
  offsets.back() = out;
  consumer_nodes.resize(out);
  consumer_nodes.shrink_to_fit();
}

}  // namespace

// The lookups only read the value table and each node writes its own input
// ids, so on a large graph the two halves of the nodes are resolved on two
// cores, each counting its uses per value; the counts give each half its
// own places in every value's list (a counting sort, without pairs), which
// the two fill on two cores.
void GraphBuilder::IndexConsumers() {
  GraphRep& rep = *rep_;
  const std::size_t nodes = rep.nodes.size();
  const std::size_t values = rep.value_producer.size();
  const bool parallel = nodes >= kParallelNodes;
  ConsumerShare shares[2];
  shares[0].to = shares[1].from = parallel ? nodes / 2 : nodes;
  shares[1].to = nodes;
  for (ConsumerShare& share : shares) share.next.assign(values, 0);
  RunBoth(parallel, [&] { ResolveInputs(&shares[1]); }, [&] { ResolveInputs(&shares[0]); });
  // Counts into places: value v's list begins at consumer_offsets[v], the
  // first share's consumers first.
  rep.consumer_offsets.resize(values + 1);
  std::uint32_t at = 0;
  for (std::size_t v = 0; v < values; ++v) {
    const std::uint32_t first = shares[0].next[v], second = shares[1].next[v];
    rep.consumer_offsets[v] = at;
    shares[0].next[v] = at;
    shares[1].next[v] = at + first;
    at += first + second;
  }
  rep.consumer_offsets[values] = at;
  rep.consumer_nodes.resize(at);
  RunBoth(parallel, [&] { FillConsumers(&shares[1]); }, [&] { FillConsumers(&shares[0]); });
  for (ConsumerShare& share : shares) decltype(share.next)().swap(share.next);
  CompactConsumers(&rep);
}

void GraphBuilder::ResolveInputs(ConsumerShare* share) {
  const GraphRep& rep = *rep_;
  const auto& nodes = rep.nodes;
  const std::vector<Subgraph>& subgraphs = rep.subgraphs;
  ValueId* node_values = rep_->node_values.data();
  // Resolves node i's inputs, given their NameHash in `hash`.
  auto resolve_node = [&](std::size_t i, const std::uint64_t* hash) {
    const NodeRecord& o = nodes[i];
    for (std::size_t k = o.strings; k < o.strings + o.inputs; ++k, ++hash) {
      const absl::string_view input = rep.node_strings[k];
      if (input.empty()) continue;
      int scope = -1;
      const ValueId value = ResolveValue(rep, input, *hash, o.subgraph, &scope);
      if (value < 0) continue;
      node_values[k] = value;
      ++share->next[static_cast<std::size_t>(value)];
      for (int s = o.subgraph; s != scope && s > 0;) {
        const Subgraph& sub = subgraphs[static_cast<std::size_t>(s)];
        if (sub.kind != Subgraph::Kind::kAttribute) break;
        share->owners.emplace_back(value, sub.owner);
        ++share->next[static_cast<std::size_t>(value)];
        s = sub.parent;
      }
    }
  };
  // The inputs of a batch of nodes are hashed and the slots of their own
  // scope prefetched, then resolved.
  const absl::Span<const NameSlot> table(rep.values);
  std::vector<std::uint64_t> hashes;
  for (std::size_t first = share->from; first < share->to; first += kNameBatch) {
    const std::size_t last = std::min(share->to, first + kNameBatch);
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
      resolve_node(i, hash);
      hash += nodes[i].inputs;
    }
  }
}

void GraphBuilder::FillConsumers(ConsumerShare* share) {
  GraphRep& rep = *rep_;
  for (std::size_t i = share->from; i < share->to; ++i) {
    const NodeRecord& o = rep.nodes[i];
    for (std::size_t k = o.strings; k < o.strings + o.inputs; ++k) {
      const ValueId value = rep.node_values[k];
      if (value >= 0) {
        rep.consumer_nodes[share->next[static_cast<std::size_t>(value)]++] = static_cast<NodeId>(i);
      }
    }
  }
  for (const auto& use : share->owners) {
    rep.consumer_nodes[share->next[static_cast<std::size_t>(use.first)]++] = use.second;
  }
}

}  // namespace internal
}  // namespace semmap
