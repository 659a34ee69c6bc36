// StringBlocks: copies of strings in blocks that never move, for views that
// must outlive the buffer they were read from (a model rewrite's new
// pieces, graph/wire_writer.cc; a manifest module's links once its JSON
// document is gone, manifest/module_reader.h). One allocation per block,
// not per string; a string longer than a block gets a block of its own.
#ifndef SEMMAP_SRC_BASE_STRING_BLOCKS_H_
#define SEMMAP_SRC_BASE_STRING_BLOCKS_H_

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

class StringBlocks {
 public:
  // A view of a stored copy of `s`, valid as long as these blocks.
  absl::string_view Store(absl::string_view s) {
    if (s.empty()) return absl::string_view();
    if (left_ < s.size()) {
      const std::size_t size = std::max(kBlockBytes, s.size());
      blocks_.push_back(std::make_unique<char[]>(size));
      next_ = blocks_.back().get();
      left_ = size;
    }
    std::memcpy(next_, s.data(), s.size());
    const absl::string_view stored(next_, s.size());
    next_ += s.size();
    left_ -= s.size();
    return stored;
  }

 private:
  static constexpr std::size_t kBlockBytes = std::size_t{1} << 20;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  std::size_t left_ = 0;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_STRING_BLOCKS_H_
