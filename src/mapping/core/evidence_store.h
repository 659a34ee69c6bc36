// EvidenceStore: the text of every Mapping::evidence of one mapper, each
// distinct string stored once (most nodes of a scope, and most inferred
// nodes, share theirs), in blocks that never move: a mapper hands out views
// and allocates per distinct text, not per node.
#ifndef SEMMAP_SRC_MAPPING_CORE_EVIDENCE_STORE_H_
#define SEMMAP_SRC_MAPPING_CORE_EVIDENCE_STORE_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

class EvidenceStore {
 public:
  EvidenceStore() = default;
  EvidenceStore(const EvidenceStore&) = delete;
  EvidenceStore& operator=(const EvidenceStore&) = delete;

  // A view of a stored copy of `text`, valid as long as the store.
  absl::string_view Intern(absl::string_view text);
  // A view of a stored copy of `text`, kept whole and not looked up: for
  // many texts known to be distinct, written one after the other, of which
  // callers take views of parts. Intern does not find them.
  absl::string_view Keep(absl::string_view text);
  // A view of a stored copy of `text` in the shared blocks, not looked up
  // and not indexed: for texts known to be distinct (each names another
  // node), whose index would cost a probe and a slot apiece. Intern does
  // not find them.
  absl::string_view Append(absl::string_view text) {
    return text.empty() ? absl::string_view() : Store(text);
  }

 private:
  absl::string_view Store(absl::string_view text);  // a copy in the blocks

  static constexpr std::size_t kBlockBytes = 64 * 1024;
  absl::flat_hash_set<absl::string_view> index_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t left_ = 0;  // free bytes at the end of the last block
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_MAPPING_CORE_EVIDENCE_STORE_H_
