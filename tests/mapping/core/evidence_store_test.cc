// EvidenceStore (mapping/core/evidence_store.h): each distinct text stored
// once, in blocks that never move.
#include <string>

#include "absl/strings/string_view.h"
#include "catch2/catch.hpp"
#include "mapping/core/evidence_store.h"

namespace {

TEST_CASE("The evidence store interns texts once and keeps whole texts apart") {
  semmap::internal::EvidenceStore store;
  const absl::string_view a = store.Intern("scope /a");
  CHECK(store.Intern(std::string("scope /a")).data() == a.data());  // one copy
  const std::string whole = "scope /bscope /c";
  const absl::string_view kept = store.Keep(whole);
  CHECK(kept == whole);
  CHECK(kept.data() != whole.data());  // a copy, owned by the store
  // Kept texts are not looked up: interning one makes another copy.
  const absl::string_view b = store.Intern("scope /bscope /c");
  CHECK(b == kept);
  CHECK(b.data() != kept.data());
  // A text longer than a block, then small ones after it, all intact.
  const std::string big(100000, 'x');
  CHECK(store.Intern(big) == big);
  CHECK(store.Intern("scope /d") == "scope /d");
  CHECK(a == "scope /a");
  CHECK(store.Keep("").empty());
  // Appended texts share the blocks and are neither looked up nor found.
  const absl::string_view appended = store.Append("reference node n1 (same name)");
  CHECK(appended == "reference node n1 (same name)");
  CHECK(store.Append("reference node n1 (same name)").data() != appended.data());
  CHECK(store.Intern("reference node n1 (same name)").data() != appended.data());
  CHECK(store.Append("").empty());
  CHECK(a == "scope /a");
}

}  // namespace
