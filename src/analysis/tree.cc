#include "semmap/tree.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "manifest/rule_queries.h"
#include "mapping/core/mapper_access.h"
#include "mapping/core/mapping_record.h"

namespace semmap {
namespace {

constexpr std::int64_t kMaxCount = std::numeric_limits<std::int64_t>::max();

std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  std::int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? kMaxCount : sum;
}

// Elements of a tensor of `shape` (dims are non-negative, Manifest checks).
std::int64_t Elements(absl::Span<const std::int64_t> shape) {
  std::int64_t elements = 1;
  for (std::int64_t d : shape) {
    if (d == 0) return 0;
    if (__builtin_mul_overflow(elements, d, &elements)) elements = kMaxCount;
  }
  return elements;
}

// Sums the children's subtree histograms into their parents' unless the
// total would pass `budget` entries; then every subtree histogram is
// cleared and false is returned.
bool AccumulateOpTypes(std::vector<TreeModule>* modules, std::size_t budget) {
  std::size_t entries = 0;
  for (const TreeModule& m : *modules) entries += m.own_op_types.size();
  bool complete = entries <= budget;
  for (std::size_t i = modules->size(); complete && i-- > 1;) {
    const TreeModule& child = (*modules)[i];
    TreeModule& parent = (*modules)[static_cast<std::size_t>(child.parent)];
    const std::size_t before = parent.subtree_op_types.size();
    for (const auto& [op, count] : child.subtree_op_types) parent.subtree_op_types[op] += count;
    entries += parent.subtree_op_types.size() - before;
    complete = entries <= budget;
  }
  if (!complete) {
    for (TreeModule& m : *modules) std::map<std::string, std::size_t>().swap(m.subtree_op_types);
  }
  return complete;
}

}  // namespace

bool IsLibraryLeaf(const ModuleInfo& info, const Rules& rules) {
  return info.children.empty() && internal::RuleQueries(rules).IsLibraryModule(info);
}

std::string QualifiedOpType(const Node& node) {
  if (node.domain.empty() || node.domain == "ai.onnx") return std::string(node.op_type);
  return absl::StrCat(node.domain, ".", node.op_type);
}

ModuleNodeCounts CountModuleNodes(const SemanticMapper& mapper,
                                  const std::function<bool(NodeId, const Mapping&)>& node_filter) {
  const Manifest& manifest = mapper.manifest();
  ModuleNodeCounts c;
  c.own.assign(manifest.size(), 0);
  const auto count = [&c](ModuleId module, bool mapped) {
    ++c.counted;
    if (mapped) {
      ++c.own[module];
    } else {
      ++c.unmapped;
    }
  };
  if (node_filter) {
    const MappingList mappings = mapper.mapAll();
    for (std::size_t i = 0; i < mappings.size(); ++i) {
      const Mapping& m = mappings[i];
      if (node_filter(static_cast<NodeId>(i), m)) count(m.module, m.mapped());
    }
  } else {
    // Without a filter no Mapping is needed: the records hold the module.
    for (const internal::MappingRecord& r : internal::MapperAccess::Records(mapper)) {
      count(r.module, r.mapped());
    }
  }
  // Parents precede children in a manifest: accumulate bottom-up.
  c.subtree = c.own;
  for (std::size_t i = manifest.size(); i-- > 1;) {
    c.subtree[manifest.parent(static_cast<ModuleId>(i))] += c.subtree[i];
  }
  return c;
}

// About 65 lines: lays out the visible modules, then fills their counts,
// parameters and histograms, each in one short marked loop.
ModuleTree ModuleTree::Build(const SemanticMapper& mapper, const TreeOptions& options) {
  ModuleTree tree;
  const Manifest& manifest = mapper.manifest();
  tree.manifest_ = &manifest;
  tree.model_specific_only_ = options.model_specific_only;
  tree.index_of_module_.assign(manifest.size(), -1);

  // Lay out the visible modules in pre-order.
  std::vector<std::pair<ModuleId, int>> stack = {{manifest.root(), -1}};
  while (!stack.empty()) {
    const auto [id, parent] = stack.back();
    stack.pop_back();
    const int index = static_cast<int>(tree.modules_.size());
    TreeModule m;
    m.module = id;
    m.parent = parent;
    m.depth = parent < 0 ? 0 : tree.modules_[parent].depth + 1;
    tree.modules_.push_back(std::move(m));
    tree.index_of_module_[id] = index;
    if (parent >= 0) tree.modules_[parent].children.push_back(index);
    const auto& children = manifest.children(id);
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
      if (options.model_specific_only && IsLibraryLeaf(manifest.module(*it), mapper.rules())) continue;
      stack.emplace_back(*it, index);
    }
  }
  // A folded leaf's host is its parent, which has children and so is shown.
  auto host = [&](ModuleId id) {
    const int index = tree.index_of_module_[id];
    return index >= 0 ? index : tree.index_of_module_[manifest.parent(id)];
  };
  const ModuleNodeCounts counts = CountModuleNodes(mapper, options.node_filter);
  tree.counted_nodes_ = counts.counted;
  tree.unmapped_nodes_ = counts.unmapped;
  for (std::size_t id = 0; id < manifest.size(); ++id) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(id));
    TreeModule& m = tree.modules_[host(static_cast<ModuleId>(id))];
    if (tree.index_of_module_[id] < 0) m.folded.push_back(static_cast<ModuleId>(id));
    m.own_nodes += counts.own[id];
    for (const TensorSpec& p : info.parameters) {
      m.own_parameters = SaturatingAdd(m.own_parameters, Elements(p.shape));
    }
  }
  const MappingList mappings = mapper.mapAll();
  for (std::size_t i = 0; i < mappings.size(); ++i) {
    const Mapping& mapping = mappings[i];
    if (!mapping.mapped()) continue;
    if (options.node_filter && !options.node_filter(static_cast<NodeId>(i), mapping)) continue;
    TreeModule& m = tree.modules_[host(mapping.module)];
    ++m.own_op_types[QualifiedOpType(mapper.graph().node(static_cast<NodeId>(i)))];
  }
  // A folded module is a leaf below its host: the host's subtree in the
  // manifest is its subtree here.
  for (TreeModule& m : tree.modules_) {
    m.subtree_nodes = counts.subtree[m.module];
    m.subtree_parameters = m.own_parameters;
    m.subtree_op_types = m.own_op_types;
  }
  // Pre-order puts children after parents: accumulate in reverse.
  for (std::size_t i = tree.modules_.size(); i-- > 1;) {
    const TreeModule& child = tree.modules_[i];
    TreeModule& parent = tree.modules_[child.parent];
    parent.subtree_parameters = SaturatingAdd(parent.subtree_parameters, child.subtree_parameters);
  }
  tree.subtree_op_types_complete_ = AccumulateOpTypes(&tree.modules_, options.max_op_type_entries);
  return tree;
}

int ModuleTree::find(absl::string_view path) const {
  const ModuleId id = manifest_->find(path);
  return id == kNoModule ? -1 : index_of_module_[id];
}

}  // namespace semmap
