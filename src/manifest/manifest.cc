#include "semmap/manifest.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "io/file_io.h"
#include "io/json_reader.h"
#include "manifest/module_tree.h"

namespace semmap {
namespace internal {

bool IsNumericAtom(absl::string_view atom) {
  if (atom.empty()) return false;
  return std::all_of(atom.begin(), atom.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

// Sets ModuleInfo::numbered_children once the children are linked.
void MarkNumberedChildren(std::vector<ModuleInfo>* modules) {
  for (ModuleInfo& m : *modules) {
    m.numbered_children = !m.children.empty();
    for (ModuleId c : m.children) {
      const std::string& path = (*modules)[c].path;
      const std::size_t dot = path.rfind('.');
      if (!IsNumericAtom(dot == std::string::npos ? absl::string_view(path)
                                                  : absl::string_view(path).substr(dot + 1))) {
        m.numbered_children = false;
        break;
      }
    }
  }
}

}  // namespace internal

std::string VariableNameOf(absl::string_view path) {
  // Walk back over trailing numeric atoms to the first non-numeric one.
  std::size_t start = path.size();
  while (true) {
    const std::size_t dot = path.rfind('.', start == 0 ? 0 : start - 1);
    const std::size_t atom_begin = dot == absl::string_view::npos ? 0 : dot + 1;
    const absl::string_view atom = path.substr(atom_begin, start - atom_begin);
    start = atom_begin;
    if (!internal::IsNumericAtom(atom) || atom_begin == 0) break;
    start = atom_begin - 1;  // step over the dot
  }
  return std::string(path.substr(start));
}

Manifest::Manifest(const Manifest& other)
    : schema_version_(other.schema_version_),
      model_class_(other.model_class_),
      model_qualified_class_(other.model_qualified_class_),
      model_type_(other.model_type_),
      config_(other.config_),
      modules_(other.modules_) {
  // The tables view this copy's own strings; the paths are known unique.
  (void)Index("");
}

Manifest& Manifest::operator=(const Manifest& other) {
  if (this != &other) *this = Manifest(other);
  return *this;
}

Manifest Manifest::FromModulePaths(
    const std::vector<std::pair<std::string, std::string>>& paths_and_classes) {
  Manifest m;
  m.schema_version_ = 1;  // no forward signatures
  m.modules_.emplace_back();  // root
  // Modules move while the vector grows: index their own strings at the end.
  absl::flat_hash_map<std::string, ModuleId> by_path;
  by_path.emplace("", 0);
  auto set_class = [&m](ModuleId id, const std::string& qualified) {
    ModuleInfo& info = m.modules_[id];
    if (qualified.empty() || !info.qualified_class.empty()) return;
    info.qualified_class = qualified;
    const std::size_t dot = qualified.rfind('.');
    info.class_name = dot == std::string::npos ? qualified : qualified.substr(dot + 1);
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
      const ModuleId id = static_cast<ModuleId>(m.modules_.size());
      ModuleInfo info;
      info.path = path;
      info.parent = parent;
      info.depth = m.modules_[parent].depth + 1;
      m.modules_[parent].children.push_back(id);
      by_path.emplace(path, id);
      m.modules_.push_back(std::move(info));
      parent = id;
    }
    if (parent != 0) set_class(parent, entry.second);
  }
  (void)m.Index("");  // paths are unique by construction
  internal::MarkNumberedChildren(&m.modules_);
  return m;
}

absl::Status Manifest::Index(absl::string_view origin) {
  by_path_.clear();
  by_variable_name_.clear();
  tensor_owner_.clear();
  by_path_.reserve(modules_.size());
  std::size_t tensor_bytes = 0, tensors = 0;
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    ModuleInfo& info = modules_[i];
    if (!by_path_.emplace(info.path, static_cast<ModuleId>(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": /modules/", i, "/path: duplicate module path \"",
          internal::Abbreviate(info.path), "\""));
    }
    info.variable_name = VariableNameOf(info.path);
    for (const auto* list : {&info.parameters, &info.buffers}) {
      for (const TensorSpec& t : *list) {
        tensor_bytes += info.path.size() + 1 + t.name.size();
        ++tensors;
      }
    }
  }
  // Keys are views: filled once every string is in place.
  for (std::size_t i = 1; i < modules_.size(); ++i) {
    by_variable_name_[modules_[i].variable_name].push_back(static_cast<ModuleId>(i));
  }
  tensor_names_.clear();
  tensor_names_.reserve(tensor_bytes);
  tensor_owner_.reserve(tensors);
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    const ModuleInfo& info = modules_[i];
    for (const auto* list : {&info.parameters, &info.buffers}) {
      for (const TensorSpec& t : *list) {
        const std::size_t begin = tensor_names_.size();
        tensor_names_.insert(tensor_names_.end(), info.path.begin(), info.path.end());
        if (!info.path.empty()) tensor_names_.push_back('.');
        tensor_names_.insert(tensor_names_.end(), t.name.begin(), t.name.end());
        // reserve() above: the buffer does not move while names are added.
        tensor_owner_.emplace(
            absl::string_view(tensor_names_.data() + begin, tensor_names_.size() - begin),
            static_cast<ModuleId>(i));
      }
    }
  }
  return absl::OkStatus();
}

ModuleId Manifest::find(absl::string_view path) const {
  auto it = by_path_.find(path);
  return it == by_path_.end() ? kNoModule : it->second;
}

const std::vector<ModuleId>& Manifest::withVariableName(absl::string_view name) const {
  static const std::vector<ModuleId> kEmpty;
  auto it = by_variable_name_.find(name);
  return it == by_variable_name_.end() ? kEmpty : it->second;
}

ModuleId Manifest::ownerOfTensor(absl::string_view full_name) const {
  auto it = tensor_owner_.find(full_name);
  return it == tensor_owner_.end() ? kNoModule : it->second;
}

bool Manifest::isAncestorOrSelf(ModuleId ancestor, ModuleId id) const {
  if (ancestor == kNoModule || id == kNoModule) return false;
  while (id != kNoModule && modules_[id].depth > modules_[ancestor].depth) {
    id = modules_[id].parent;
  }
  return id == ancestor;
}

ModuleId Manifest::lowestCommonAncestor(ModuleId a, ModuleId b) const {
  if (a == kNoModule || b == kNoModule) return kNoModule;
  while (modules_[a].depth > modules_[b].depth) a = modules_[a].parent;
  while (modules_[b].depth > modules_[a].depth) b = modules_[b].parent;
  while (a != b) {
    a = modules_[a].parent;
    b = modules_[b].parent;
  }
  return a;
}

}  // namespace semmap
