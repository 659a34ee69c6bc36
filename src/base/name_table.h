// Name tables: the open-addressing hash tables behind Graph's by-id index and
// value table (graph/graph_rep.h, NameSlot).
//
// A table is a vector of slots sized once for the most entries it will hold
// and kept at most 3/4 full, so it never rehashes while loading and every
// probe sequence ends at a free slot. A slot is 12 bytes: the index its key
// maps to (a NodeId or ValueId), the key's scope, and a tag, the high 32
// bits of the key's 64-bit hash (the low bits choose the slot, HomeSlot).
// The key's name is not stored: the table's owner
// gives it from the index (`name_of`, the node's id or the value's name).
// A probe compares tags and scopes first and reads the name only when they
// match, so a miss costs one cache line of slots and a hit two more reads
// (the owner's entry, then the name's bytes). At 1M nodes the two tables
// take 32 MB instead of the 128 MB of slots that kept the name beside the
// hash. Linear probing keeps the next candidates on the same cache line.
//
// Slots are never removed: an erased key keeps its slot, its index encoded
// by ErasedSlot (still naming the entry that gives its name), and Insert
// gives that slot back to an equal key.
//
// Functions are templates over the slot type (any struct with `tag`,
// `scope` and `index` members) and over `name_of` (a callable from an
// index, live or ErasedKey of an erased one, to the key's name) so the
// types can live in the graph layer above. Not thread-safe for writing;
// lookups of a finished table may run on any number of threads.
#ifndef SEMMAP_SRC_BASE_NAME_TABLE_H_
#define SEMMAP_SRC_BASE_NAME_TABLE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/huge_pages.h"

namespace semmap {
namespace internal {

inline constexpr std::int32_t kFreeSlot = -1;

// The index of an erased slot whose name is entry `key`'s (key >= 0), and
// back: erased indexes are kFreeSlot - 1 and below.
inline constexpr std::int32_t ErasedSlot(std::int32_t key) { return -2 - key; }
inline constexpr std::int32_t ErasedKey(std::int32_t index) { return -2 - index; }
inline constexpr bool IsErased(std::int32_t index) { return index < kFreeSlot; }

// The tag kept in a slot: the bits of the hash that do not choose the slot.
inline std::uint32_t NameTag(std::uint64_t hash) { return static_cast<std::uint32_t>(hash >> 32); }

// The hash of a name, computed once per name and combined with each scope
// it is looked up in (ScopedHash).
inline std::uint64_t NameHash(absl::string_view name) {
  return absl::Hash<absl::string_view>()(name);
}

// The hash of `name` as defined in `scope`, from NameHash(name). A bijection
// of the name's hash for each scope (multiply-xorshift finalizer), so scope
// 0 loses nothing and other scopes land elsewhere.
inline std::uint64_t ScopedHash(std::uint64_t name_hash, std::int32_t scope) {
  std::uint64_t h =
      name_hash ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(scope)) *
                   0x9e3779b97f4a7c15ULL);
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  h ^= h >> 32;
  return h;
}

// Slots for a table of up to `entries` keys: at least 8, at most 3/4 full
// (any size: HomeSlot scales the hash to it; a power of two was up to 3/8
// full, and its free slots were memory zeroed for nothing).
inline std::size_t NameTableCapacity(std::size_t entries) {
  return std::max<std::size_t>(8, entries + entries / 3 + 1);
}

// The slot where a probe for `hash` begins in `size` slots: the low 32 bits
// of the hash scaled to the size (multiply and shift), so that the tag's
// high 32 bits are not reused. Sizes stay far below 2^32 slots (48 GB).
inline std::size_t HomeSlot(std::uint64_t hash, std::size_t size) {
  return static_cast<std::size_t>((static_cast<std::uint64_t>(static_cast<std::uint32_t>(hash)) *
                                   static_cast<std::uint64_t>(size)) >>
                                  32);
}

// Starts loading the slot where a probe for `hash` begins. Loops over many
// names hash a batch of them first and prefetch their slots, so the cache
// misses of the batch overlap instead of coming one after the other.
template <typename Slot>
inline void PrefetchName(absl::Span<const Slot> table, std::uint64_t hash) {
#if defined(__GNUC__) || defined(__clang__)
  if (!table.empty()) __builtin_prefetch(&table[HomeSlot(hash, table.size())]);
#else
  (void)table;
  (void)hash;
#endif
}

// Names hashed and prefetched ahead of their probes (see PrefetchName).
inline constexpr std::size_t kNameBatch = 32;

// Makes `*table` `capacity` free slots. Probes land anywhere in it, so on
// Linux a large table asks for transparent huge pages before its memory is
// first touched: one TLB entry covers 2 MB instead of 4 kB.
template <typename Slot>
void InitNameTable(std::vector<Slot>* table, std::size_t capacity) {
  table->clear();
  table->reserve(capacity);
  AdviseHugePages(table->data(), capacity * sizeof(Slot));
  table->resize(capacity);
}

// The slot holding (scope, name), or nullptr. The slot may be erased
// (IsErased): callers that want live keys check index >= 0.
template <typename Slot, typename NameOf>
const Slot* FindName(absl::Span<const Slot> table, std::uint64_t hash, std::int32_t scope,
                     absl::string_view name, const NameOf& name_of) {
  if (table.empty()) return nullptr;
  const std::uint32_t tag = NameTag(hash);
  for (std::size_t i = HomeSlot(hash, table.size());; i = i + 1 == table.size() ? 0 : i + 1) {
    const Slot& s = table[i];
    if (s.index == kFreeSlot) return nullptr;
    if (s.tag == tag && s.scope == scope && name_of(s.index) == name) return &s;
  }
}

// The slot of (scope, name): the one holding it, or a free one now holding
// the key's tag and scope with index kFreeSlot, for the caller to set (so
// that name_of gives `name`) before the next call. The table must have
// room (NameTableCapacity).
template <typename Slot, typename NameOf>
Slot* InsertName(absl::Span<Slot> table, std::uint64_t hash, std::int32_t scope,
                 absl::string_view name, const NameOf& name_of) {
  const std::uint32_t tag = NameTag(hash);
  for (std::size_t i = HomeSlot(hash, table.size());; i = i + 1 == table.size() ? 0 : i + 1) {
    Slot& s = table[i];
    if (s.index == kFreeSlot) {
      s.tag = tag;
      s.scope = scope;
      return &s;
    }
    if (s.tag == tag && s.scope == scope && name_of(s.index) == name) return &s;
  }
}

// Moves the keys of `*table` (erased ones too) into `capacity` slots; a
// key's slot is found again from its name's hash.
template <typename Slot, typename NameOf>
void ResizeNameTable(std::vector<Slot>* table, std::size_t capacity, const NameOf& name_of) {
  std::vector<Slot> old(capacity);
  old.swap(*table);
  for (const Slot& s : old) {
    if (s.index == kFreeSlot) continue;
    const std::uint64_t hash = ScopedHash(NameHash(name_of(s.index)), s.scope);
    std::size_t i = HomeSlot(hash, capacity);
    while ((*table)[i].index != kFreeSlot) i = i + 1 == capacity ? 0 : i + 1;
    (*table)[i] = s;
  }
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_NAME_TABLE_H_
