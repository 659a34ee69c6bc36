#include "semmap/manifest.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "base/text.h"
#include "manifest/manifest_rep.h"
#include "manifest/module_path.h"

namespace semmap {
namespace internal {
namespace {

// Where VariableNameOf(path) begins in `path`: walks back over trailing
// numeric atoms to the first non-numeric one.
std::size_t VariableNameStart(absl::string_view path) {
  std::size_t start = path.size();
  while (true) {
    const std::size_t dot = path.rfind('.', start == 0 ? 0 : start - 1);
    const std::size_t atom_begin = dot == absl::string_view::npos ? 0 : dot + 1;
    const absl::string_view atom = path.substr(atom_begin, start - atom_begin);
    start = atom_begin;
    if (!IsNumericAtom(atom) || atom_begin == 0) break;
    start = atom_begin - 1;  // step over the dot
  }
  return start;
}

}  // namespace

ModuleInfo ModuleAt(const ManifestRep* rep, std::ptrdiff_t index) {
  const ModuleId id = static_cast<ModuleId>(index);
  const ModuleRecord& r = rep->modules[id];
  const absl::Span<const TensorSpec> tensors = rep->Tensors(id);
  ModuleInfo info;
  info.path = rep->Path(id);
  info.class_name = rep->classes[r.class_index].first;
  info.qualified_class = rep->classes[r.class_index].second;
  info.parent = r.parent;
  info.children = rep->Children(id);
  info.parameters = tensors.subspan(0, r.parameter_count);
  info.buffers = tensors.subspan(r.parameter_count);
  info.depth = r.depth;
  info.numbered_children = r.numbered_children;
  info.variable_name = info.path.substr(r.variable_name);
  info.forward = rep->Events(id);
  info.traced = r.traced;
  return info;
}

absl::string_view ManifestBuilder::Intern(absl::string_view s) {
  auto it = interned_.find(s);
  if (it != interned_.end()) return it->second;
  const absl::string_view kept = rep_->interned.emplace_back(s);
  interned_.emplace(kept, kept);
  return kept;
}

ModuleId ManifestBuilder::AddModule(absl::string_view path, absl::string_view class_name,
                                    absl::string_view qualified_class) {
  if (rep_->classes.empty()) rep_->classes.emplace_back();  // ("", "") at 0
  ModuleRecord r;
  r.path = rep_->chars.size();
  r.path_size = static_cast<std::uint32_t>(path.size());
  rep_->chars.append(path.data(), path.size());
  r.first_tensor = static_cast<std::uint32_t>(rep_->tensors.size());
  r.first_event = static_cast<std::uint32_t>(rep_->events.size());
  rep_->modules.push_back(r);
  const ModuleId id = static_cast<ModuleId>(rep_->modules.size() - 1);
  SetClass(id, class_name, qualified_class);
  return id;
}

void ManifestBuilder::SetClass(ModuleId id, absl::string_view class_name,
                               absl::string_view qualified_class) {
  if (class_name.empty() && qualified_class.empty()) {
    rep_->modules[id].class_index = 0;
    return;
  }
  const std::pair<absl::string_view, absl::string_view> key(Intern(class_name),
                                                            Intern(qualified_class));
  auto [it, added] = classes_.emplace(key, static_cast<std::uint32_t>(rep_->classes.size()));
  if (added) rep_->classes.push_back(key);
  rep_->modules[id].class_index = it->second;
}

void ManifestBuilder::AddTensor(bool buffer, absl::string_view name,
                                absl::Span<const std::int64_t> shape, absl::string_view dtype) {
  ModuleRecord& r = rep_->modules.back();
  ++(buffer ? r.buffer_count : r.parameter_count);
  TensorSpec spec;
  spec.name = Intern(name);
  spec.dtype = Intern(dtype);
  rep_->dotted_tensor_names = rep_->dotted_tensor_names || name.find('.') != name.npos;
  shape_ranges_.emplace_back(static_cast<std::uint32_t>(rep_->dims.size()),
                             static_cast<std::uint32_t>(shape.size()));
  rep_->dims.insert(rep_->dims.end(), shape.begin(), shape.end());
  rep_->tensors.push_back(spec);
}

absl::Span<const TensorSpec> ManifestBuilder::LastTensors() const {
  return rep_->Tensors(static_cast<ModuleId>(rep_->modules.size() - 1));
}

void ManifestBuilder::StartForward() { rep_->modules.back().traced = true; }

void ManifestBuilder::AddCall() {
  ++rep_->modules.back().event_count;
  rep_->events.emplace_back();
  read_ranges_.emplace_back(0, 0);
}

void ManifestBuilder::AddOp(absl::string_view op, absl::Span<const absl::string_view> reads) {
  ++rep_->modules.back().event_count;
  ForwardEvent event;
  event.op = Intern(op);
  rep_->events.push_back(event);
  read_ranges_.emplace_back(static_cast<std::uint32_t>(rep_->reads.size()),
                            static_cast<std::uint32_t>(reads.size()));
  for (absl::string_view r : reads) rep_->reads.push_back(Intern(r));
}

void ManifestBuilder::SetCall(ModuleId module, std::size_t event, ModuleId callee) {
  rep_->events[rep_->modules[module].first_event + event].call = callee;
}

void ManifestBuilder::SetParent(ModuleId id, ModuleId parent) {
  ModuleRecord& r = rep_->modules[id];
  r.parent = parent;
  r.depth = rep_->modules[parent].depth + 1;  // parents come first
}

ManifestBuilder::ChildLayout ManifestBuilder::ChildrenByParent() const {
  const std::vector<ModuleRecord>& mods = rep_->modules;
  const std::size_t n = mods.size();
  ChildLayout layout;
  layout.first.assign(n + 1, 0);
  for (std::size_t i = 1; i < n; ++i) ++layout.first[mods[i].parent + 1];
  for (std::size_t i = 0; i < n; ++i) layout.first[i + 1] += layout.first[i];
  layout.children.resize(n > 0 ? n - 1 : 0);
  std::vector<std::size_t> next(layout.first.begin(), layout.first.end() - 1);
  for (std::size_t i = 1; i < n; ++i) {
    layout.children[next[mods[i].parent]++] = static_cast<ModuleId>(i);
  }
  return layout;
}

void ManifestBuilder::SetChildren(ChildLayout layout) {
  for (std::size_t m = 0; m < rep_->modules.size(); ++m) {
    rep_->modules[m].first_child = static_cast<std::uint32_t>(layout.first[m]);
    rep_->modules[m].child_count =
        static_cast<std::uint32_t>(layout.first[m + 1] - layout.first[m]);
  }
  rep_->children = std::move(layout.children);
}

absl::Status ManifestBuilder::IndexPaths(absl::string_view origin) {
  ManifestRep& rep = *rep_;
  for (std::size_t t = 0; t < rep.tensors.size(); ++t) {
    rep.tensors[t].shape =
        absl::MakeConstSpan(rep.dims.data() + shape_ranges_[t].first, shape_ranges_[t].second);
  }
  for (std::size_t e = 0; e < rep.events.size(); ++e) {
    rep.events[e].reads =
        absl::MakeConstSpan(rep.reads.data() + read_ranges_[e].first, read_ranges_[e].second);
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>>().swap(shape_ranges_);
  std::vector<std::pair<std::uint32_t, std::uint32_t>>().swap(read_ranges_);
  for (ModuleId m = 0; m < static_cast<ModuleId>(rep.modules.size()); ++m) {
    const absl::Span<const TensorSpec> tensors = rep.Tensors(m);
    if (tensors.size() > ManifestRep::kSearchedTensors) {
      for (std::uint32_t i = 0; i < tensors.size(); ++i) {
        rep.large_module_tensors.emplace(std::make_pair(m, tensors[i].name), i);
      }
    }
    if (!rep.dotted_tensor_names) continue;
    const absl::string_view path = rep.Path(m);
    for (const TensorSpec& t : tensors) {
      rep.tensor_owner.emplace(path.empty() ? std::string(t.name) : absl::StrCat(path, ".", t.name),
                               m);
    }
  }
  rep.chars.shrink_to_fit();  // the keys below view it: no more appends
  rep.by_path.reserve(rep.modules.size());
  for (std::size_t i = 0; i < rep.modules.size(); ++i) {
    const absl::string_view path = rep.Path(static_cast<ModuleId>(i));
    if (!rep.by_path.emplace(path, static_cast<ModuleId>(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": /modules/", i, "/path: duplicate module path \"",
          internal::Abbreviate(std::string(path)), "\""));
    }
  }
  return absl::OkStatus();
}

void ManifestBuilder::FinishLinks() {
  ManifestRep& rep = *rep_;
  const std::size_t n = rep.modules.size();
  // Variable names, and the modules but the root grouped by them (in
  // manifest order within a name): counted, then placed.
  std::vector<std::uint32_t> group(n, 0);
  std::vector<std::uint32_t> group_size;
  for (std::size_t i = 0; i < n; ++i) {
    ModuleRecord& r = rep.modules[i];
    const absl::string_view path = rep.Path(static_cast<ModuleId>(i));
    r.variable_name = static_cast<std::uint32_t>(VariableNameStart(path));
    if (i == 0) continue;
    auto [it, added] = rep.by_variable_name.emplace(
        path.substr(r.variable_name),
        std::make_pair(static_cast<std::uint32_t>(group_size.size()), std::uint32_t{0}));
    if (added) group_size.push_back(0);
    group[i] = it->second.first;
    ++group_size[group[i]];
  }
  std::vector<std::uint32_t> next(group_size.size(), 0);
  for (std::size_t g = 1; g < group_size.size(); ++g) next[g] = next[g - 1] + group_size[g - 1];
  for (auto& [name, range] : rep.by_variable_name) {
    range = {next[range.first], group_size[range.first]};
  }
  rep.variable_name_order.resize(n > 0 ? n - 1 : 0);
  for (std::size_t i = 1; i < n; ++i) {
    rep.variable_name_order[next[group[i]]++] = static_cast<ModuleId>(i);
  }
  // A ModuleList or Sequential: children whose last atoms are all numbers.
  for (std::size_t i = 0; i < n; ++i) {
    const absl::Span<const ModuleId> children = rep.Children(static_cast<ModuleId>(i));
    rep.modules[i].numbered_children =
        !children.empty() && std::all_of(children.begin(), children.end(), [&](ModuleId c) {
          return IsNumericAtom(LastAtom(rep.Path(c)));
        });
  }
}

}  // namespace internal

std::string VariableNameOf(absl::string_view path) {
  return std::string(path.substr(internal::VariableNameStart(path)));
}

int Manifest::schemaVersion() const { return rep_->schema_version; }
const std::string& Manifest::modelClass() const { return rep_->model_class; }
const std::string& Manifest::modelQualifiedClass() const { return rep_->model_qualified_class; }
const std::string& Manifest::modelType() const { return rep_->model_type; }
const std::vector<std::pair<std::string, std::string>>& Manifest::config() const {
  return rep_->config;
}
std::size_t Manifest::size() const { return rep_->modules.size(); }
absl::string_view Manifest::path(ModuleId id) const { return rep_->Path(id); }
ModuleId Manifest::parent(ModuleId id) const { return rep_->modules[id].parent; }
int Manifest::depth(ModuleId id) const { return rep_->modules[id].depth; }
absl::Span<const ModuleId> Manifest::children(ModuleId id) const { return rep_->Children(id); }

absl::Span<const TensorSpec> Manifest::parameters(ModuleId id) const {
  return rep_->Tensors(id).subspan(0, rep_->modules[id].parameter_count);
}
absl::Span<const ForwardEvent> Manifest::forward(ModuleId id) const { return rep_->Events(id); }
bool Manifest::traced(ModuleId id) const { return rep_->modules[id].traced; }

Manifest Manifest::FromModulePaths(
    const std::vector<std::pair<std::string, std::string>>& paths_and_classes) {
  auto rep = std::make_shared<internal::ManifestRep>();
  rep->schema_version = 1;  // no forward signatures
  internal::ManifestBuilder builder(rep.get());
  builder.AddModule("", "", "");  // root
  // The paths' own table while they are added (the rep's is built once they
  // are all in place).
  absl::flat_hash_map<std::string, ModuleId> by_path;
  by_path.emplace("", 0);
  std::vector<ModuleId> parents(1, kNoModule);
  std::vector<bool> has_class(1, false);
  auto set_class = [&](ModuleId id, const std::string& qualified) {
    if (qualified.empty() || has_class[id]) return;
    has_class[id] = true;
    const std::size_t dot = qualified.rfind('.');
    builder.SetClass(id, dot == std::string::npos ? absl::string_view(qualified)
                                                  : absl::string_view(qualified).substr(dot + 1),
                     qualified);
  };
  for (const auto& entry : paths_and_classes) {
    const std::string& full = entry.first;
    if (full.empty()) set_class(0, entry.second);
    ModuleId parent = 0;
    std::string path;
    for (absl::string_view atom : absl::StrSplit(full, '.', absl::SkipEmpty())) {
      if (!path.empty()) path.push_back('.');
      path.append(atom.data(), atom.size());
      auto it = by_path.find(path);
      if (it != by_path.end()) {
        parent = it->second;
        continue;
      }
      const ModuleId id = builder.AddModule(path, "", "");
      parents.push_back(parent);
      has_class.push_back(false);
      by_path.emplace(path, id);
      parent = id;
    }
    if (parent != 0) set_class(parent, entry.second);
  }
  (void)builder.IndexPaths("");  // paths are unique by construction
  for (std::size_t i = 1; i < parents.size(); ++i) {
    builder.SetParent(static_cast<ModuleId>(i), parents[i]);
  }
  // A parent's children in the order they were added (by id).
  builder.SetChildren(builder.ChildrenByParent());
  builder.FinishLinks();
  return Manifest(std::move(rep));
}

ModuleId Manifest::find(absl::string_view path) const {
  auto it = rep_->by_path.find(path);
  return it == rep_->by_path.end() ? kNoModule : it->second;
}

ModuleId Manifest::findChild(ModuleId parent, absl::string_view name) const {
  const absl::string_view prefix = path(parent);
  const std::size_t size = prefix.size() + (prefix.empty() ? 0 : 1) + name.size();
  // A few children are compared faster than a long path is hashed; a name
  // with a dot is a deeper module's, never a child's.
  constexpr std::size_t kScannedChildren = 16;
  const absl::Span<const ModuleId> kids = children(parent);
  if (kids.size() <= kScannedChildren && name.find('.') == absl::string_view::npos) {
    for (ModuleId c : kids) {
      const absl::string_view p = path(c);
      if (p.size() == size && p.substr(size - name.size()) == name) return c;
    }
    return kNoModule;  // every module with that path is a child: none is
  }
  // The path is put together on the stack unless it is long.
  char stack[256];
  std::string heap;
  char* full = stack;
  if (size > sizeof(stack)) {
    heap.resize(size);
    full = &heap[0];
  }
  std::copy(prefix.begin(), prefix.end(), full);
  if (!prefix.empty()) full[prefix.size()] = '.';
  std::copy(name.begin(), name.end(), full + size - name.size());
  return find(absl::string_view(full, size));
}

absl::Span<const ModuleId> Manifest::withVariableName(absl::string_view name) const {
  auto it = rep_->by_variable_name.find(name);
  if (it == rep_->by_variable_name.end()) return {};
  return absl::MakeConstSpan(rep_->variable_name_order.data() + it->second.first,
                             it->second.second);
}

ModuleId Manifest::ownerOfTensor(absl::string_view full_name) const {
  if (rep_->dotted_tensor_names) {
    auto it = rep_->tensor_owner.find(full_name);
    return it == rep_->tensor_owner.end() ? kNoModule : it->second;
  }
  // The module's path, then its tensor's local name, which holds no dot
  // (torch's attribute names cannot).
  const std::size_t dot = full_name.rfind('.');
  const ModuleId m = find(dot == absl::string_view::npos ? absl::string_view()
                                                         : full_name.substr(0, dot));
  if (m == kNoModule) return kNoModule;
  const absl::string_view local =
      dot == absl::string_view::npos ? full_name : full_name.substr(dot + 1);
  return findTensor(m, local) != nullptr ? m : kNoModule;
}

const TensorSpec* Manifest::findTensor(ModuleId id, absl::string_view local) const {
  const absl::Span<const TensorSpec> tensors = rep_->Tensors(id);
  if (tensors.size() > internal::ManifestRep::kSearchedTensors) {
    auto it = rep_->large_module_tensors.find(std::make_pair(id, local));
    return it == rep_->large_module_tensors.end() ? nullptr : &tensors[it->second];
  }
  for (const TensorSpec& t : tensors) {
    if (t.name == local) return &t;
  }
  return nullptr;
}

bool Manifest::isAncestorOrSelf(ModuleId ancestor, ModuleId id) const {
  if (ancestor == kNoModule || id == kNoModule) return false;
  const std::vector<internal::ModuleRecord>& mods = rep_->modules;
  while (id != kNoModule && mods[id].depth > mods[ancestor].depth) id = mods[id].parent;
  return id == ancestor;
}

ModuleId Manifest::lowestCommonAncestor(ModuleId a, ModuleId b) const {
  if (a == kNoModule || b == kNoModule) return kNoModule;
  const std::vector<internal::ModuleRecord>& mods = rep_->modules;
  while (mods[a].depth > mods[b].depth) a = mods[a].parent;
  while (mods[b].depth > mods[a].depth) b = mods[b].parent;
  while (a != b) {
    a = mods[a].parent;
    b = mods[b].parent;
  }
  return a;
}

}  // namespace semmap
