// The name tables behind Graph's indexes (base/name_table.h): a slot
// keeps a tag of the key's hash, its scope and an index, and the owner gives
// the key's name from the index. Keys whose hashes collide, even in full,
// stay apart by name; erased keys keep their slot; a resize finds every key
// again from its name.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "base/name_table.h"
#include "catch2/catch.hpp"

namespace {

using semmap::internal::ErasedKey;
using semmap::internal::ErasedSlot;
using semmap::internal::FindName;
using semmap::internal::InitNameTable;
using semmap::internal::InsertName;
using semmap::internal::IsErased;
using semmap::internal::kFreeSlot;
using semmap::internal::NameHash;
using semmap::internal::NameTableCapacity;
using semmap::internal::ResizeNameTable;
using semmap::internal::ScopedHash;

struct Slot {
  std::uint32_t tag = 0;
  std::int32_t scope = 0;
  std::int32_t index = -1;
};

// A table over `names`: entry i is names[i]; an erased slot names its key.
struct Table {
  std::vector<std::string> names;
  std::vector<Slot> slots;
  absl::string_view operator()(std::int32_t index) const {
    return names[static_cast<std::size_t>(index >= 0 ? index : ErasedKey(index))];
  }
  // Inserts names[i] in `scope` with `hash`; returns the index found or set.
  std::int32_t Insert(std::size_t i, std::uint64_t hash, std::int32_t scope = 0) {
    Slot* s = InsertName(absl::MakeSpan(slots), hash, scope, names[i], *this);
    if (s->index == kFreeSlot) s->index = static_cast<std::int32_t>(i);
    return s->index;
  }
  const Slot* Find(absl::string_view name, std::uint64_t hash, std::int32_t scope = 0) const {
    return FindName(absl::Span<const Slot>(slots), hash, scope, name, *this);
  }
};

TEST_CASE("Name tables tell keys with equal hashes apart by name and scope", "[name_table]") {
  Table t;
  t.names = {"a", "b", "c", "a"};
  InitNameTable(&t.slots, NameTableCapacity(8));
  const std::uint64_t same = 0x123456789abcdef0ULL;  // every key, same hash
  CHECK(t.Insert(0, same) == 0);
  CHECK(t.Insert(1, same) == 1);
  CHECK(t.Insert(2, same, 7) == 2);
  // "a" again: the slot already holding it.
  CHECK(t.Insert(3, same) == 0);
  const Slot* a = t.Find("a", same);
  const Slot* b = t.Find("b", same);
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a->index == 0);
  CHECK(b->index == 1);
  CHECK(t.Find("c", same) == nullptr);  // "c" is in scope 7 only
  REQUIRE(t.Find("c", same, 7) != nullptr);
  CHECK(t.Find("c", same, 7)->index == 2);
  CHECK(t.Find("d", same) == nullptr);
  // The same name under another tag is another key.
  CHECK(t.Find("a", same ^ (std::uint64_t{1} << 40)) == nullptr);
}

TEST_CASE("An erased key keeps its slot and its name, and survives a resize", "[name_table]") {
  Table t;
  for (int i = 0; i < 40; ++i) t.names.push_back("n" + std::to_string(i));
  InitNameTable(&t.slots, NameTableCapacity(t.names.size()));
  auto hash = [&t](std::size_t i) { return ScopedHash(NameHash(t.names[i]), 0); };
  for (std::size_t i = 0; i < t.names.size(); ++i) CHECK(t.Insert(i, hash(i)) == static_cast<int>(i));
  // Erase "n5": its slot stays, named by entry 5.
  Slot* five = const_cast<Slot*>(t.Find("n5", hash(5)));
  REQUIRE(five != nullptr);
  five->index = ErasedSlot(five->index);
  CHECK(IsErased(five->index));
  CHECK(ErasedKey(five->index) == 5);
  ResizeNameTable(&t.slots, NameTableCapacity(4 * t.names.size()), t);
  CHECK(t.slots.size() == NameTableCapacity(4 * t.names.size()));
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    const Slot* s = t.Find(t.names[i], hash(i));
    REQUIRE(s != nullptr);
    CHECK(s->index == (i == 5 ? ErasedSlot(5) : static_cast<std::int32_t>(i)));
  }
  // An equal key inserted again gets the erased slot back.
  t.names.push_back("n5");
  Slot* again = InsertName(absl::MakeSpan(t.slots), hash(5), 0, "n5", t);
  CHECK(IsErased(again->index));
  again->index = static_cast<std::int32_t>(t.names.size() - 1);
  CHECK(t.Find("n5", hash(5))->index == 40);
}

}  // namespace
