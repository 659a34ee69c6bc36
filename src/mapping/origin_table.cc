#include "mapping/origin_table.h"

#include <algorithm>
#include <utility>

namespace semmap {
namespace internal {

void OriginTable::Set(NodeId node, std::vector<ModuleId> modules) {
  std::sort(modules.begin(), modules.end());
  modules.erase(std::unique(modules.begin(), modules.end()), modules.end());
  modules.erase(std::remove(modules.begin(), modules.end(), kNoModule), modules.end());
  if (modules.size() < 2) {
    table_.erase(node);
    return;
  }
  table_[node] = std::move(modules);
}

absl::Span<const ModuleId> OriginTable::Of(NodeId node) const {
  auto it = table_.find(node);
  if (it == table_.end()) return {};
  return it->second;
}

}  // namespace internal
}  // namespace semmap
