#include "semmap/query.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "manifest/module_path.h"
#include "re2/re2.h"
#include "semmap/tree.h"

namespace semmap {
namespace {

std::string Quoted(absl::string_view path) { return absl::StrCat("\"", path, "\""); }

// Edit distance, or `limit` + 1 once it exceeds `limit` (the rows stop).
std::size_t BoundedDistance(absl::string_view a, absl::string_view b, std::size_t limit) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return limit + 1;
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    std::size_t best = row[0];
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;
  }
  return row[b.size()];
}

// "no module "X" in the manifest", with the closest module path when one is
// a few edits away (a typo) or ends the same way (a path given without its
// leading atoms). Bounded: paths longer than 1 KiB and manifests of more
// than 100k modules get no suggestion.
absl::Status NoSuchModule(const Manifest& manifest, absl::string_view path) {
  std::string message = absl::StrCat("no module ", Quoted(path), " in the manifest");
  if (path.empty() || path.size() > 1024 || manifest.size() > 100'000) {
    return absl::NotFoundError(message);
  }
  const std::size_t limit = std::max<std::size_t>(2, path.size() / 5);
  std::size_t best = limit + 1;
  absl::string_view suggestion;
  for (const ModuleInfo& info : manifest.modules()) {
    const absl::string_view candidate = info.path;
    if (candidate.size() > path.size() &&
        candidate.substr(candidate.size() - path.size()) == path &&
        candidate[candidate.size() - path.size() - 1] == '.') {
      suggestion = candidate;  // the path without its leading atoms
      break;
    }
    const std::size_t d = BoundedDistance(path, candidate, limit);
    if (d < best) {
      best = d;
      suggestion = candidate;
    }
  }
  if (!suggestion.empty()) absl::StrAppend(&message, "; did you mean ", Quoted(suggestion), "?");
  return absl::NotFoundError(message);
}

}  // namespace

SemanticQuery::SemanticQuery(const SemanticMapper& mapper) : mapper_(&mapper) {
  own_nodes_.resize(mapper.manifest().size());
  const MappingList all = mapper.mapAll();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].mapped()) own_nodes_[all[i].module].push_back(static_cast<NodeId>(i));
  }
  DetectContainers();
}

void SemanticQuery::DetectContainers() {
  const Manifest& manifest = mapper_->manifest();
  for (std::size_t id = 0; id < manifest.size(); ++id) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(id));
    // Numbered children (the manifest's test: every last atom is digits)
    // of one class; an atom too long for 64 bits is no index.
    if (!info.numbered_children) continue;
    RepeatedContainer c;
    c.module = static_cast<ModuleId>(id);
    bool repeated = true;
    bool blocks = true;
    for (ModuleId child : info.children) {
      const ModuleInfo& item = manifest.module(child);
      std::int64_t index = 0;
      if (!absl::SimpleAtoi(internal::LastAtom(item.path), &index) ||
          item.qualified_class != manifest.module(info.children.front()).qualified_class) {
        repeated = false;
        break;
      }
      blocks = blocks && !item.children.empty();
      c.items.push_back(child);
      c.indices.push_back(index);
    }
    if (!repeated) continue;
    // Registration order is index order for a ModuleList, but sort anyway:
    // the atom, not the position, names the layer.
    std::vector<std::size_t> order(c.items.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return c.indices[a] < c.indices[b]; });
    RepeatedContainer sorted = c;
    for (std::size_t i = 0; i < order.size(); ++i) {
      sorted.items[i] = c.items[order[i]];
      sorted.indices[i] = c.indices[order[i]];
    }
    const ModuleInfo& first = manifest.module(sorted.items.front());
    sorted.item_class = std::string(first.class_name);
    sorted.item_qualified_class = std::string(first.qualified_class);
    sorted.layer = blocks;
    containers_.push_back(std::move(sorted));
  }
  // A container inside an item of another (ResNet's stages.0.layers inside
  // stages) is a detail of that item, not a layer of the model.
  for (RepeatedContainer& inner : containers_) {
    for (const RepeatedContainer& outer : containers_) {
      if (&inner == &outer) continue;
      for (ModuleId item : outer.items) {
        if (manifest.isAncestorOrSelf(item, inner.module)) inner.outermost = false;
      }
    }
    inner.layer = inner.layer && inner.outermost;
  }
}

std::vector<const RepeatedContainer*> SemanticQuery::layerContainers() const {
  std::vector<const RepeatedContainer*> out;
  for (const RepeatedContainer& c : containers_) {
    if (c.layer) out.push_back(&c);
  }
  return out;
}

const RepeatedContainer* SemanticQuery::findContainer(absl::string_view path) const {
  const ModuleId id = mapper_->manifest().find(path);
  for (const RepeatedContainer& c : containers_) {
    if (c.module == id) return &c;
  }
  return nullptr;
}

std::vector<NodeId> SemanticQuery::SubtreeNodes(const std::vector<ModuleId>& roots) const {
  const Manifest& manifest = mapper_->manifest();
  std::vector<NodeId> out;
  std::vector<ModuleId> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const ModuleId id = stack.back();
    stack.pop_back();
    out.insert(out.end(), own_nodes_[id].begin(), own_nodes_[id].end());
    const auto& children = manifest.children(id);
    stack.insert(stack.end(), children.begin(), children.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

absl::StatusOr<std::vector<NodeId>> SemanticQuery::nodesOfModule(absl::string_view path,
                                                                 bool subtree) const {
  const ModuleId id = mapper_->manifest().find(path);
  if (id == kNoModule) return NoSuchModule(mapper_->manifest(), path);
  if (!subtree) return own_nodes_[id];
  return SubtreeNodes({id});
}

absl::StatusOr<std::vector<NodeId>> SemanticQuery::nodesOfLayer(std::int64_t index) const {
  if (index < 0) {
    return absl::InvalidArgumentError(absl::StrCat("layer index ", index, " is negative"));
  }
  const Manifest& manifest = mapper_->manifest();
  std::vector<ModuleId> items;
  std::vector<std::string> sizes;
  for (const RepeatedContainer* c : layerContainers()) {
    sizes.push_back(absl::StrCat(Quoted(manifest.path(c->module)), " (",
                                 c->items.size(), " items)"));
    for (std::size_t i = 0; i < c->items.size(); ++i) {
      if (c->indices[i] == index) items.push_back(c->items[i]);
    }
  }
  if (sizes.empty()) {
    return absl::NotFoundError(
        "the manifest has no layer container (a module whose children are numbered "
        "blocks of one class)");
  }
  if (items.empty()) {
    return absl::NotFoundError(absl::StrCat("no layer ", index, " in the layer containers ",
                                            absl::StrJoin(sizes, ", ")));
  }
  return SubtreeNodes(items);
}

absl::StatusOr<std::vector<NodeId>> SemanticQuery::nodesOfLayer(absl::string_view container,
                                                                std::int64_t index) const {
  if (index < 0) {
    return absl::InvalidArgumentError(absl::StrCat("layer index ", index, " is negative"));
  }
  if (mapper_->manifest().find(container) == kNoModule) {
    return NoSuchModule(mapper_->manifest(), container);
  }
  const RepeatedContainer* c = findContainer(container);
  if (c == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "module ", Quoted(container),
        " is not a repeated container (its children are not numbered modules of one class)"));
  }
  for (std::size_t i = 0; i < c->items.size(); ++i) {
    if (c->indices[i] == index) return SubtreeNodes({c->items[i]});
  }
  return absl::NotFoundError(absl::StrCat("no layer ", index, " in ", Quoted(container), " (",
                                          c->items.size(), " items)"));
}

absl::StatusOr<std::vector<NodeId>> SemanticQuery::nodesOfClass(absl::string_view cls) const {
  if (cls.empty()) return absl::InvalidArgumentError("empty class name");
  const Manifest& manifest = mapper_->manifest();
  bool known = false;
  std::vector<NodeId> out;
  for (std::size_t id = 0; id < manifest.size(); ++id) {
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(id));
    if (info.class_name != cls && info.qualified_class != cls) continue;
    known = true;
    out.insert(out.end(), own_nodes_[id].begin(), own_nodes_[id].end());
  }
  if (!known) {
    return absl::NotFoundError(absl::StrCat("no module of class ", Quoted(cls), " in the manifest"));
  }
  std::sort(out.begin(), out.end());
  return out;
}

absl::StatusOr<std::vector<NodeId>> SemanticQuery::nodesMatching(absl::string_view pattern) const {
  if (pattern.empty()) {
    return absl::InvalidArgumentError("empty module path pattern");
  }
  RE2::Options options;
  options.set_log_errors(false);
  const RE2 re(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid pattern ", Quoted(pattern), ": ", re.error()));
  }
  const Manifest& manifest = mapper_->manifest();
  std::vector<NodeId> out;
  for (std::size_t id = 0; id < manifest.size(); ++id) {
    const absl::string_view path = manifest.module(static_cast<ModuleId>(id)).path;
    if (!RE2::PartialMatch(re2::StringPiece(path.data(), path.size()), re)) continue;
    out.insert(out.end(), own_nodes_[id].begin(), own_nodes_[id].end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ModuleId> SemanticQuery::modulesWithoutNodes(bool subtree) const {
  const ModuleNodeCounts counts = CountModuleNodes(*mapper_);
  const std::vector<std::size_t>& nodes = subtree ? counts.subtree : counts.own;
  std::vector<ModuleId> out;
  for (std::size_t id = 1; id < nodes.size(); ++id) {
    if (nodes[id] == 0) out.push_back(static_cast<ModuleId>(id));
  }
  return out;
}

std::vector<NodeId> SemanticQuery::nodesOfCategory(absl::string_view category) const {
  return nodesWhere([category](NodeId, const Mapping& m) { return m.mapped() && m.category == category; });
}

std::vector<NodeId> SemanticQuery::nodesBelowConfidence(double threshold) const {
  return nodesWhere([threshold](NodeId, const Mapping& m) { return m.confidence < threshold; });
}

std::vector<NodeId> SemanticQuery::nodesWhere(
    const std::function<bool(NodeId, const Mapping&)>& predicate) const {
  std::vector<NodeId> out;
  const MappingList all = mapper_->mapAll();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (predicate(static_cast<NodeId>(i), all[i])) out.push_back(static_cast<NodeId>(i));
  }
  return out;
}

}  // namespace semmap
