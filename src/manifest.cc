#include "semmap/manifest.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "internal/file_io.h"
#include "internal/json_nesting.h"
#include "internal/out_of_memory.h"
#include "internal/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmap {
namespace {

using nlohmann::json;

constexpr int kMaxJsonNesting = 256;

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

// Field access with errors that carry the JSON pointer of the field.
class Reader {
 public:
  explicit Reader(absl::string_view origin) : origin_(origin) {}

  absl::Status Error(const std::string& pointer, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat(origin_, ": ", pointer.empty() ? "/" : pointer, ": ", what));
  }

  absl::StatusOr<const json*> Field(const json& obj, const std::string& pointer,
                                    const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) {
      return Error(pointer, absl::StrCat("missing required field \"", key, "\""));
    }
    return &*it;
  }

  absl::StatusOr<std::string> String(const json& obj, const std::string& pointer,
                                     const char* key, bool allow_empty) const {
    SEMMAP_ASSIGN_OR_RETURN(const json* v, Field(obj, pointer, key));
    const std::string where = absl::StrCat(pointer, "/", key);
    if (!v->is_string()) {
      return Error(where, absl::StrCat("expected a string, found ", v->type_name()));
    }
    std::string s = v->get<std::string>();
    if (!allow_empty && s.empty()) return Error(where, "must not be empty");
    return s;
  }

  absl::StatusOr<std::vector<TensorSpec>> Tensors(const json& obj,
                                                  const std::string& pointer,
                                                  const char* key) const {
    SEMMAP_ASSIGN_OR_RETURN(const json* v, Field(obj, pointer, key));
    const std::string where = absl::StrCat(pointer, "/", key);
    if (!v->is_array()) {
      return Error(where, absl::StrCat("expected an array, found ", v->type_name()));
    }
    std::vector<TensorSpec> out;
    out.reserve(v->size());
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& t = (*v)[i];
      const std::string tp = absl::StrCat(where, "/", i);
      if (!t.is_object()) return Error(tp, "expected an object");
      TensorSpec spec;
      SEMMAP_ASSIGN_OR_RETURN(spec.name, String(t, tp, "name", false));
      SEMMAP_ASSIGN_OR_RETURN(spec.dtype, String(t, tp, "dtype", false));
      SEMMAP_ASSIGN_OR_RETURN(const json* shape, Field(t, tp, "shape"));
      if (!shape->is_array()) return Error(tp + "/shape", "expected an array");
      for (std::size_t d = 0; d < shape->size(); ++d) {
        const json& dim = (*shape)[d];
        if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0) {
          return Error(absl::StrCat(tp, "/shape/", d),
                       "expected a non-negative integer");
        }
        spec.shape.push_back(dim.get<std::int64_t>());
      }
      out.push_back(std::move(spec));
    }
    return out;
  }

 private:
  absl::string_view origin_;
};

absl::Status ParseModules(const json& doc, const Reader& r,
                          std::vector<ModuleInfo>* modules,
                          std::vector<std::pair<std::string, std::vector<std::string>>>* links,
                          std::size_t max_modules) {
  auto it = doc.find("modules");
  if (it == doc.end()) return r.Error("", "missing required field \"modules\"");
  if (!it->is_array()) {
    return r.Error("/modules", absl::StrCat("expected an array, found ", it->type_name()));
  }
  if (it->empty()) return r.Error("/modules", "must list at least the root module");
  if (it->size() > max_modules) {
    return r.Error("/modules", absl::StrCat(it->size(), " modules, above the limit of ",
                                            max_modules));
  }
  modules->reserve(it->size());
  links->reserve(it->size());
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string p = absl::StrCat("/modules/", i);
    if (!m.is_object()) return r.Error(p, "expected an object");
    ModuleInfo info;
    SEMMAP_ASSIGN_OR_RETURN(info.path, r.String(m, p, "path", true));
    SEMMAP_ASSIGN_OR_RETURN(info.class_name, r.String(m, p, "class", false));
    SEMMAP_ASSIGN_OR_RETURN(info.qualified_class, r.String(m, p, "qualified_class", false));
    SEMMAP_ASSIGN_OR_RETURN(const json* parent, r.Field(m, p, "parent"));
    std::string parent_path;
    if (parent->is_null()) {
      if (i != 0 || !info.path.empty()) {
        return r.Error(p + "/parent", "only the root (the first module, path \"\") has no parent");
      }
    } else if (parent->is_string()) {
      if (i == 0) return r.Error(p + "/parent", "the root module must have parent null");
      parent_path = parent->get<std::string>();
    } else {
      return r.Error(p + "/parent", "expected a string or null");
    }
    SEMMAP_ASSIGN_OR_RETURN(const json* children, r.Field(m, p, "children"));
    if (!children->is_array()) return r.Error(p + "/children", "expected an array");
    std::vector<std::string> child_paths;
    child_paths.reserve(children->size());
    for (std::size_t c = 0; c < children->size(); ++c) {
      if (!(*children)[c].is_string()) {
        return r.Error(absl::StrCat(p, "/children/", c), "expected a string");
      }
      child_paths.push_back((*children)[c].get<std::string>());
    }
    SEMMAP_ASSIGN_OR_RETURN(info.parameters, r.Tensors(m, p, "parameters"));
    SEMMAP_ASSIGN_OR_RETURN(info.buffers, r.Tensors(m, p, "buffers"));
    modules->push_back(std::move(info));
    links->emplace_back(std::move(parent_path), std::move(child_paths));
  }
  return absl::OkStatus();
}

}  // namespace

std::string VariableNameOf(absl::string_view path) {
  // Walk back over trailing numeric atoms to the first non-numeric one.
  std::size_t start = path.size();
  while (true) {
    const std::size_t dot = path.rfind('.', start == 0 ? 0 : start - 1);
    const std::size_t atom_begin = dot == absl::string_view::npos ? 0 : dot + 1;
    const absl::string_view atom = path.substr(atom_begin, start - atom_begin);
    start = atom_begin;
    if (!IsNumericAtom(atom) || atom_begin == 0) break;
    start = atom_begin - 1;  // step over the dot
  }
  return std::string(path.substr(start));
}

absl::StatusOr<Manifest> Manifest::Load(const std::string& path,
                                        const ManifestOptions& options) try {
  SEMMAP_ASSIGN_OR_RETURN(std::string text,
                          internal::ReadFile(path, options.max_file_bytes));
  return Parse(text, path, options);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(path, "loading the manifest");
} catch (const std::length_error&) {
  return internal::OutOfMemory(path, "loading the manifest");
}

absl::StatusOr<Manifest> Manifest::Parse(absl::string_view text,
                                         absl::string_view origin,
                                         const ManifestOptions& options) try {
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected a JSON manifest"));
  }
  SEMMAP_RETURN_IF_ERROR(internal::CheckJsonNesting(text, kMaxJsonNesting, origin));
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": not valid JSON at byte ", e.byte, ": ",
        internal::Abbreviate(e.what(), 200)));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": cannot parse JSON: ",
                                                   internal::Abbreviate(e.what(), 200)));
  }
  const Reader r(origin);
  if (!doc.is_object()) {
    return r.Error("", absl::StrCat("expected a JSON object, found ", doc.type_name()));
  }
  auto format = doc.find("format");
  if (format == doc.end() || !format->is_string() ||
      format->get<std::string>() != "semmap.manifest") {
    return r.Error("/format", "not a semmap manifest (expected \"format\": \"semmap.manifest\")");
  }
  auto version = doc.find("schema_version");
  if (version == doc.end() || !version->is_number_integer()) {
    return r.Error("/schema_version", "missing or not an integer");
  }
  Manifest m;
  // Compared as read: get<int>() would wrap 2^32 + 1 to 1.
  const std::int64_t schema_version = version->is_number_unsigned()
                                          ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                version->get<std::uint64_t>(), INT64_MAX))
                                          : version->get<std::int64_t>();
  if (schema_version != kManifestSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        origin, ": manifest schema version ", version->dump(),
        " is not supported (this build reads version ", kManifestSchemaVersion, ")"));
  }
  m.schema_version_ = kManifestSchemaVersion;
  SEMMAP_ASSIGN_OR_RETURN(const json* model, r.Field(doc, "", "model"));
  if (!model->is_object()) return r.Error("/model", "expected an object");
  SEMMAP_ASSIGN_OR_RETURN(m.model_class_, r.String(*model, "/model", "class", false));
  SEMMAP_ASSIGN_OR_RETURN(m.model_qualified_class_,
                          r.String(*model, "/model", "qualified_class", false));
  auto model_type = model->find("model_type");
  if (model_type != model->end() && model_type->is_string()) {
    m.model_type_ = model_type->get<std::string>();
  }
  auto config = model->find("config");
  if (config != model->end() && config->is_object()) {
    for (auto c = config->begin(); c != config->end(); ++c) {
      m.config_.emplace_back(c.key(), c.value().dump());
    }
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> links;
  SEMMAP_RETURN_IF_ERROR(ParseModules(doc, r, &m.modules_, &links, options.max_modules));
  if (!m.modules_[0].path.empty()) {
    return r.Error("/modules/0/path", "the first module must be the root, path \"\"");
  }
  SEMMAP_RETURN_IF_ERROR(m.Index(origin));
  // Resolve parent and children links and check they agree.
  for (std::size_t i = 1; i < m.modules_.size(); ++i) {
    const ModuleId parent = m.find(links[i].first);
    if (parent == kNoModule) {
      return r.Error(absl::StrCat("/modules/", i, "/parent"),
                     absl::StrCat("unknown module \"", internal::Abbreviate(links[i].first), "\""));
    }
    if (static_cast<std::size_t>(parent) >= i) {
      return r.Error(absl::StrCat("/modules/", i, "/parent"),
                     "a parent must be listed before its children (cyclic or out-of-order parents)");
    }
    // Module paths are dotted: a parent's path is its child's without the
    // last atom. A parent named otherwise would break every path lookup.
    const std::string& path = m.modules_[i].path;
    const std::size_t dot = path.rfind('.');
    const absl::string_view expected =
        dot == std::string::npos ? absl::string_view() : absl::string_view(path).substr(0, dot);
    if (links[i].first != expected) {
      return r.Error(absl::StrCat("/modules/", i, "/parent"),
                     absl::StrCat("\"", internal::Abbreviate(links[i].first),
                                  "\" is not the module's path without its last atom, \"",
                                  internal::Abbreviate(std::string(expected)), "\""));
    }
    m.modules_[i].parent = parent;
    m.modules_[i].depth = m.modules_[parent].depth + 1;
  }
  std::vector<bool> listed(m.modules_.size(), false);
  for (std::size_t i = 0; i < m.modules_.size(); ++i) {
    for (std::size_t c = 0; c < links[i].second.size(); ++c) {
      const ModuleId child = m.find(links[i].second[c]);
      const std::string where = absl::StrCat("/modules/", i, "/children/", c);
      if (child == kNoModule) {
        return r.Error(where, absl::StrCat("unknown module \"",
                                           internal::Abbreviate(links[i].second[c]), "\""));
      }
      if (m.modules_[child].parent != static_cast<ModuleId>(i)) {
        return r.Error(where, "child does not name this module as its parent");
      }
      // Only its parent may list a child, so once overall means once there.
      if (listed[child]) {
        return r.Error(where, absl::StrCat("child \"", internal::Abbreviate(links[i].second[c]),
                                           "\" is listed twice"));
      }
      listed[child] = true;
      m.modules_[i].children.push_back(child);
    }
  }
  for (std::size_t i = 1; i < m.modules_.size(); ++i) {
    if (!listed[i]) {  // O(1): a linear search of siblings is quadratic on flat models
      return r.Error(absl::StrCat("/modules/", i, "/parent"),
                     "parent does not list this module among its children");
    }
  }
  MarkNumberedChildren(&m.modules_);
  return m;
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the manifest");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the manifest");
}

Manifest Manifest::FromModulePaths(
    const std::vector<std::pair<std::string, std::string>>& paths_and_classes) {
  Manifest m;
  m.schema_version_ = kManifestSchemaVersion;
  m.modules_.emplace_back();  // root
  m.by_path_.emplace("", 0);
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
      auto it = m.by_path_.find(path);
      if (it != m.by_path_.end()) {
        parent = it->second;
        continue;
      }
      const ModuleId id = static_cast<ModuleId>(m.modules_.size());
      ModuleInfo info;
      info.path = path;
      info.parent = parent;
      info.depth = m.modules_[parent].depth + 1;
      info.variable_name = VariableNameOf(path);
      m.modules_[parent].children.push_back(id);
      m.by_variable_name_[info.variable_name].push_back(id);
      m.by_path_.emplace(path, id);
      m.modules_.push_back(std::move(info));
      parent = id;
    }
    if (parent != 0) set_class(parent, entry.second);
  }
  MarkNumberedChildren(&m.modules_);
  return m;
}

absl::Status Manifest::Index(absl::string_view origin) {
  by_path_.reserve(modules_.size());
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    ModuleInfo& info = modules_[i];
    if (!by_path_.emplace(info.path, static_cast<ModuleId>(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": /modules/", i, "/path: duplicate module path \"",
          internal::Abbreviate(info.path), "\""));
    }
    info.variable_name = VariableNameOf(info.path);
    if (i > 0) by_variable_name_[info.variable_name].push_back(static_cast<ModuleId>(i));
    for (const auto* list : {&info.parameters, &info.buffers}) {
      for (const TensorSpec& t : *list) {
        tensor_owner_.emplace(info.path.empty() ? t.name : absl::StrCat(info.path, ".", t.name),
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
