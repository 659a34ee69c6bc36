#include "internal/graph_builder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "internal/file_io.h"

namespace semmap {
namespace internal {

void GraphBuilder::SetModelInfo(std::int64_t ir_version, std::string producer_name,
                                std::string producer_version, std::int64_t opset,
                                std::vector<std::pair<std::string, std::string>> metadata) {
  g_.ir_version_ = ir_version;
  g_.producer_name_ = std::move(producer_name);
  g_.producer_version_ = std::move(producer_version);
  g_.opset_ = opset;
  g_.model_metadata_ = std::move(metadata);
}

absl::Status OpsetOutOfRange(absl::string_view origin, std::int64_t version) {
  return absl::InvalidArgumentError(absl::StrCat(
      origin, ": opset_import version ", version, " is out of range (not a valid ONNX model)"));
}

absl::Status GraphBuilder::Charge(std::size_t n) {
  list_entries_ += n;
  if (list_entries_ > options_.max_list_entries) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": more than ", options_.max_list_entries,
        " inputs, outputs, attributes, metadata entries and dims (GraphOptions::max_list_entries)"));
  }
  return absl::OkStatus();
}

absl::Status GraphBuilder::CheckNesting(int parent) const {
  if (g_.subgraphs_[static_cast<std::size_t>(parent)].depth + 1 > options_.max_subgraph_depth) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": subgraphs nested deeper than ", options_.max_subgraph_depth,
        " levels (GraphOptions::max_subgraph_depth)"));
  }
  return absl::OkStatus();
}

int GraphBuilder::AddSubgraph(Subgraph s) {
  if (s.kind == Subgraph::Kind::kAttribute) {
    s.depth = g_.subgraphs_[static_cast<std::size_t>(s.parent)].depth + 1;
  }
  g_.subgraphs_.push_back(std::move(s));
  return static_cast<int>(g_.subgraphs_.size()) - 1;
}

absl::Status GraphBuilder::AddNode(int subgraph, NodeId* id) {
  if (g_.nodes_.size() >= options_.max_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin_, ": more than ", options_.max_nodes, " nodes (GraphOptions::max_nodes)"));
  }
  *id = static_cast<NodeId>(g_.nodes_.size());
  g_.nodes_.emplace_back();
  g_.nodes_.back().subgraph = subgraph;
  return absl::OkStatus();
}

absl::Status GraphBuilder::CheckNames() const {
  const std::size_t limit = options_.max_name_bytes;
  for (std::size_t i = 0; i < g_.nodes_.size(); ++i) {
    const Node& n = g_.nodes_[i];
    std::size_t longest = std::max(n.name.size(), n.op_type.size());
    for (const std::string& v : n.inputs) longest = std::max(longest, v.size());
    for (const std::string& v : n.outputs) longest = std::max(longest, v.size());
    if (longest > limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin_, ": node ", i, " (", Abbreviate(n.name, 80), ") has a name of ", longest,
          " bytes, above the limit of ", limit, " (GraphOptions::max_name_bytes)"));
    }
  }
  return absl::OkStatus();
}

Graph GraphBuilder::Finish() {
  std::vector<Node>& nodes = g_.nodes_;
  // A name is its node's id when non-empty and unique in the model; the
  // by-id index is built on the way (one hash probe per node).
  auto& by_id = g_.by_id_;
  by_id.reserve(nodes.size());
  std::vector<bool> duplicate(nodes.size(), false);
  bool any_duplicate = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string& name = nodes[i].name;
    if (name.empty()) continue;
    auto inserted = by_id.try_emplace(name, static_cast<NodeId>(i));
    if (!inserted.second) {
      duplicate[static_cast<std::size_t>(inserted.first->second)] = true;
      duplicate[i] = true;
      any_duplicate = true;
    }
  }
  // Duplicated and empty names leave the index; their nodes get
  // "<name>#<index>". Such an id can only collide with another node's unique
  // name ("a#3" named so on purpose): the name keeps it and the generated id
  // takes '#' suffixes until it is free.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (duplicate[i]) by_id.erase(absl::string_view(nodes[i].name));
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    if (!n.name.empty() && !duplicate[i]) {
      n.id = n.name;
      continue;
    }
    n.id = absl::StrCat(n.name, "#", i);
    while (by_id.contains(absl::string_view(n.id))) n.id.push_back('#');
    any_duplicate = true;
  }
  if (any_duplicate) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Node& n = nodes[i];
      if (!n.name.empty() && !duplicate[i]) continue;
      by_id.emplace(n.id, static_cast<NodeId>(i));
    }
  }
  g_.BuildIndexes();
  return std::move(g_);
}

}  // namespace internal
}  // namespace semmap
