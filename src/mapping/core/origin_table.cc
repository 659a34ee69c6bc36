#include "mapping/core/origin_table.h"

#include <algorithm>
#include <utility>

namespace semmap {
namespace internal {

void OriginTable::Set(NodeId node, std::vector<ModuleId> modules, bool counted) {
  modules.erase(std::remove(modules.begin(), modules.end(), kNoModule), modules.end());
  std::sort(modules.begin(), modules.end());
  Entry entry;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (i > 0 && modules[i] == modules[i - 1]) {
      ++entry.shares.back();
      continue;
    }
    entry.modules.push_back(modules[i]);
    entry.shares.push_back(1);
  }
  if (entry.modules.size() < 2) {
    table_.erase(node);
    return;
  }
  if (!counted) entry.shares.clear();
  table_[node] = std::move(entry);
}

absl::Span<const ModuleId> OriginTable::Of(NodeId node) const {
  auto it = table_.find(node);
  if (it == table_.end()) return {};
  return it->second.modules;
}

absl::Span<const std::uint32_t> OriginTable::Shares(NodeId node) const {
  auto it = table_.find(node);
  if (it == table_.end()) return {};
  return it->second.shares;
}

}  // namespace internal
}  // namespace semmap
