// Reading a manifest file (docs/manifest.md, schema/manifest.schema.json):
// the JSON checked as strictly as its schema, then the modules linked
// (parents, children, forward calls) and indexed.
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
#include "io/json_outline.h"
#include "io/json_reader.h"
#include "io/mapped_file.h"
#include "manifest/manifest_reader.h"
#include "manifest/manifest_rep.h"
#include "manifest/module_reader.h"

namespace semmap {
namespace {

using internal::JsonValue;
using internal::Links;
using internal::ManifestBuilder;
using internal::ManifestRep;

constexpr int kMaxJsonNesting = 256;

absl::Status ReadModules(const JsonValue& doc, int version, ManifestBuilder* builder,
                         Links* links, std::size_t max_modules) {
  SEMMAP_ASSIGN_OR_RETURN(const JsonValue list, doc.Field("modules"));
  if (!list.is_array()) {
    return list.Error(absl::StrCat("expected an array, found ", list.type_name()));
  }
  const std::size_t n = list.size();
  if (n == 0) return list.Error("must list at least the root module");
  if (n > max_modules) {
    return list.Error(absl::StrCat(n, " modules, above the limit of ", max_modules));
  }
  links->parent.reserve(n);
  links->first_child.reserve(n + 1);
  links->first_child.push_back(0);
  std::size_t i = 0;
  std::vector<std::int64_t> shape;  // scratch for each tensor's
  return list.ForEachElement([&](const JsonValue& m) {
    const std::size_t index = i++;
    return internal::ReadModule(m, index, version, builder, links, &shape);
  });
}

// InvalidArgument at /modules/<i>/<where> of `origin`.
absl::Status ModuleError(absl::string_view origin, std::size_t i, absl::string_view where,
                         absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": /modules/", i, "/", where, ": ", what));
}

// Sets each module's parent and depth from `links` and checks that parents
// are listed first and named by the path.
absl::Status LinkParents(absl::string_view origin, const Links& links, const Manifest& m,
                         const ManifestRep& rep, ManifestBuilder* builder) {
  for (std::size_t i = 1; i < rep.modules.size(); ++i) {
    const absl::string_view parent_path = links.parent[i];
    // Modules are usually listed depth first, so the parent is the module
    // before or one of its nearest ancestors: a few string comparisons find
    // it without hashing the path (paths are unique: the same answer).
    ModuleId parent = kNoModule;
    ModuleId candidate = static_cast<ModuleId>(i - 1);
    for (int step = 0; step < 8 && candidate != kNoModule; ++step) {
      if (rep.Path(candidate) == parent_path) {
        parent = candidate;
        break;
      }
      candidate = rep.modules[candidate].parent;
    }
    if (parent == kNoModule) parent = m.find(parent_path);
    if (parent == kNoModule) {
      return ModuleError(origin, i, "parent",
                         absl::StrCat("unknown module \"",
                                      internal::Abbreviate(std::string(parent_path)), "\""));
    }
    if (static_cast<std::size_t>(parent) >= i) {
      return ModuleError(origin, i, "parent",
                         "a parent must be listed before its children (cyclic or "
                         "out-of-order parents)");
    }
    // Module paths are dotted: a parent's path is its child's without the
    // last atom. A parent named otherwise would break every path lookup.
    const absl::string_view path = rep.Path(static_cast<ModuleId>(i));
    const std::size_t dot = path.rfind('.');
    const absl::string_view expected =
        dot == absl::string_view::npos ? absl::string_view() : path.substr(0, dot);
    if (parent_path != expected) {
      return ModuleError(origin, i, "parent",
                         absl::StrCat("\"", internal::Abbreviate(std::string(parent_path)),
                                      "\" is not the module's path without its last atom, \"",
                                      internal::Abbreviate(std::string(expected)), "\""));
    }
    builder->SetParent(static_cast<ModuleId>(i), parent);
  }
  return absl::OkStatus();
}

// Sets each module's children from `links` once the parents are set, and
// checks that the two agree: every module listed once, by its parent.
absl::Status LinkChildren(absl::string_view origin, const Links& links, const Manifest& m,
                          const ManifestRep& rep, ManifestBuilder* builder) {
  // The modules naming each module as their parent, in manifest order: if
  // the lists agree with the parents, each module's children take these
  // places, in the order its list gives.
  const std::size_t n = rep.modules.size();
  ManifestBuilder::ChildLayout layout = builder->ChildrenByParent();
  std::vector<ModuleId>& kids = layout.children;
  const std::vector<std::size_t>& first_kid = layout.first;
  std::vector<bool> listed(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t first = links.first_child[i], end = links.first_child[i + 1];
    // Usually the children list names exactly those modules in that order:
    // checked by comparing paths, with nothing to look up. Otherwise each
    // name is looked up and checked below, with the error it deserves.
    const std::size_t kid_begin = first_kid[i], kid_count = first_kid[i + 1] - kid_begin;
    bool same = kid_count == end - first;
    for (std::size_t k = 0; same && k < kid_count; ++k) {
      same = links.children[first + k] == rep.Path(kids[kid_begin + k]);
    }
    if (same) {
      for (std::size_t k = 0; k < kid_count; ++k) listed[kids[kid_begin + k]] = true;
      continue;
    }
    // A child listed here names this module as its parent and is listed
    // once, so the list holds at most kid_count entries; every module is
    // checked to be listed below, so it ends up holding exactly those.
    for (std::size_t c = first; c < end; ++c) {
      const absl::string_view child_path = links.children[c];
      const ModuleId child = m.find(child_path);
      const auto child_error = [&](absl::string_view what) {
        return ModuleError(origin, i, absl::StrCat("children/", c - first), what);
      };
      if (child == kNoModule) {
        return child_error(absl::StrCat("unknown module \"",
                                        internal::Abbreviate(std::string(child_path)), "\""));
      }
      if (rep.modules[child].parent != static_cast<ModuleId>(i)) {
        return child_error("child does not name this module as its parent");
      }
      // Only its parent may list a child, so once overall means once there.
      if (listed[child]) {
        return child_error(absl::StrCat(
            "child \"", internal::Abbreviate(std::string(child_path)), "\" is listed twice"));
      }
      listed[child] = true;
      kids[kid_begin + (c - first)] = child;
    }
  }
  for (std::size_t i = 1; i < n; ++i) {
    if (!listed[i]) {  // O(1): a linear search of siblings is quadratic on flat models
      return ModuleError(origin, i, "parent",
                         "parent does not list this module among its children");
    }
  }
  builder->SetChildren(std::move(layout));
  return absl::OkStatus();
}

// The calls of the modules' first forward form no cycle: depth first over
// the calls (iteratively: a chain of a million calls is no deeper a stack),
// O(modules + events). The error names the call that closes the cycle.
absl::Status CheckCallsAcyclic(absl::string_view origin, const Manifest& m) {
  enum : char { kNew, kOpen, kDone };
  std::vector<char> state(m.size(), kNew);
  struct Frame {
    std::size_t module;
    std::size_t event;
  };
  std::vector<Frame> stack;
  for (std::size_t start = 0; start < m.size(); ++start) {
    if (state[start] != kNew || m.forward(static_cast<ModuleId>(start)).empty()) continue;
    state[start] = kOpen;
    stack.push_back({start, 0});
    while (!stack.empty()) {
      Frame& top = stack.back();
      const absl::Span<const ForwardEvent> forward =
          m.forward(static_cast<ModuleId>(top.module));
      if (top.event == forward.size()) {
        state[top.module] = kDone;
        stack.pop_back();
        continue;
      }
      const std::size_t event = top.event++;
      const ModuleId callee = forward[event].call;
      if (callee == kNoModule || state[callee] == kDone) continue;
      if (state[callee] == kOpen) {
        return ModuleError(origin, top.module, absl::StrCat("forward/", event, "/call"),
                           absl::StrCat("calls \"", internal::Abbreviate(std::string(m.path(callee))),
                                        "\", which is already being called: a cycle of calls"));
      }
      state[callee] = kOpen;
      stack.push_back({static_cast<std::size_t>(callee), 0});
    }
  }
  return absl::OkStatus();
}

// Resolves the callees of the modules' forward events: known modules, never
// the caller itself nor the root (which no module calls), and no module
// calling, through its callees' first calls, back to itself.
absl::Status LinkCalls(absl::string_view origin, const Links& links, const Manifest& m,
                       ManifestBuilder* builder) {
  for (const Links::Call& call : links.calls) {
    const ModuleId callee = m.find(call.path);
    const auto call_error = [&](absl::string_view what) {
      return ModuleError(origin, call.module, absl::StrCat("forward/", call.event, "/call"), what);
    };
    if (callee == kNoModule) {
      return call_error(absl::StrCat("unknown module \"",
                                     internal::Abbreviate(std::string(call.path)), "\""));
    }
    if (callee == static_cast<ModuleId>(call.module)) return call_error("a module cannot call itself");
    if (callee == m.root()) return call_error("no module calls the root");
    builder->SetCall(static_cast<ModuleId>(call.module), call.event, callee);
  }
  return CheckCallsAcyclic(origin, m);
}

// The top-level fields but the modules, in the schema's order, each checked
// where it is read so that every error names its JSON pointer, into `rep`;
// the schema_version's value.
absl::StatusOr<JsonValue> ReadTop(const JsonValue& doc, absl::string_view origin,
                                  ManifestRep* rep) {
  if (!doc.is_object()) {
    return doc.Error(absl::StrCat("expected a JSON object, found ", doc.type_name()));
  }
  const std::optional<JsonValue> format = doc.Find("format");
  if (!format || !format->is_string() || format->string() != "semmap.manifest") {
    return doc.ErrorAt("format", "not a semmap manifest (expected \"format\": \"semmap.manifest\")");
  }
  const std::optional<JsonValue> version = doc.Find("schema_version");
  if (!version || !version->is_integer()) {
    return doc.ErrorAt("schema_version", "missing or not an integer");
  }
  // Compared as read: a narrowing conversion would wrap 2^32 + 1 to 1.
  if (version->is_unsigned() || version->int64() < 1 || version->int64() > kManifestSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        origin, ": manifest schema version ",
        version->is_unsigned() ? absl::StrCat(version->uint64()) : absl::StrCat(version->int64()),
        " is not supported (this build reads versions 1 to ", kManifestSchemaVersion, ")"));
  }
  rep->schema_version = static_cast<int>(version->int64());
  SEMMAP_ASSIGN_OR_RETURN(const JsonValue model, doc.Field("model"));
  if (!model.is_object()) return model.Error("expected an object");
  SEMMAP_ASSIGN_OR_RETURN(absl::string_view model_class, model.StringField("class", false));
  SEMMAP_ASSIGN_OR_RETURN(absl::string_view model_qualified,
                          model.StringField("qualified_class", false));
  rep->model_class = std::string(model_class);
  rep->model_qualified_class = std::string(model_qualified);
  if (const std::optional<JsonValue> type = model.Find("model_type"); type && !type->is_null()) {
    if (!type->is_string()) return type->Error("expected a string or null");
    rep->model_type = std::string(type->string());
  }
  if (const std::optional<JsonValue> config = model.Find("config")) {
    if (!config->is_object()) return config->Error("expected an object");
    SEMMAP_RETURN_IF_ERROR(
        config->ForEachField([rep](absl::string_view key, const JsonValue& value) -> absl::Status {
          if (value.is_array() || value.is_object()) {
            return value.Error("expected a string, number, boolean or null");
          }
          rep->config.emplace_back(std::string(key), value.Dump());
          return absl::OkStatus();
        }));
  }
  // Not read, but the schema says what it holds: strings by name.
  if (const std::optional<JsonValue> generator = doc.Find("generator")) {
    if (!generator->is_object()) return generator->Error("expected an object");
    SEMMAP_RETURN_IF_ERROR(
        generator->ForEachField([](absl::string_view, const JsonValue& value) -> absl::Status {
          return value.is_string() ? absl::OkStatus() : value.Error("expected a string");
        }));
  }
  return *version;
}

// Once every module is read: the checks over all of them, the paths
// indexed, then parents, children and calls linked and checked.
absl::Status LinkModules(absl::string_view origin, const JsonValue& version, const Links& links,
                         const Manifest& m, const ManifestRep& rep, ManifestBuilder* builder) {
  if (rep.schema_version == 2 &&
      std::none_of(rep.modules.begin(), rep.modules.end(),
                   [](const internal::ModuleRecord& r) { return r.traced; })) {
    return version.Error(
        "version 2 needs a \"forward\" on at least one module (a file without forward "
        "signatures is version 1)");
  }
  if (rep.modules[0].path_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": /modules/0/path: the first module must be the root, path \"\""));
  }
  SEMMAP_RETURN_IF_ERROR(builder->IndexPaths(origin));
  // Resolve parent and children links and check they agree.
  SEMMAP_RETURN_IF_ERROR(LinkParents(origin, links, m, rep, builder));
  SEMMAP_RETURN_IF_ERROR(LinkChildren(origin, links, m, rep, builder));
  SEMMAP_RETURN_IF_ERROR(LinkCalls(origin, links, m, builder));
  builder->FinishLinks();
  return absl::OkStatus();
}

// Pages of the mapped file given back behind the module pass, about this
// many bytes at a time.
constexpr std::size_t kReleaseBytes = std::size_t{4} << 20;

}  // namespace

namespace internal {

absl::StatusOr<Manifest> ManifestReader::Read(absl::string_view text, absl::string_view origin,
                                              const ManifestOptions& options, Way way,
                                              std::string* owned, const MappedFile* mapped) {
  if (way != Way::kOneDocument) {
    absl::StatusOr<Manifest> outlined = ReadOutlined(text, origin, options, mapped);
    if (outlined.ok() || way == Way::kOutlined) return outlined;
  }
  return ReadOneDocument(text, origin, options, owned, mapped);
}

absl::StatusOr<Manifest> ManifestReader::ReadOneDocument(absl::string_view text,
                                                         absl::string_view origin,
                                                         const ManifestOptions& options,
                                                         std::string* owned,
                                                         const MappedFile* mapped) {
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected a JSON manifest"));
  }
  const bool padded = owned != nullptr && owned->data() == text.data() &&
                      owned->capacity() >= text.size() + kJsonPadding;
  SEMMAP_ASSIGN_OR_RETURN(
      const JsonDocument json,
      JsonDocument::Parse(text, origin, {options.max_file_bytes, kMaxJsonNesting}, padded));
  // The document holds its own copies of the strings: the text can go.
  if (owned != nullptr) std::string().swap(*owned);
  if (mapped != nullptr) mapped->Release(0, text.size());
  const JsonValue doc = json.root();
  auto rep = std::make_shared<ManifestRep>();
  SEMMAP_ASSIGN_OR_RETURN(const JsonValue version, ReadTop(doc, origin, rep.get()));
  // The manifest being built: its lookups work once the paths are indexed.
  Manifest m(rep);
  ManifestBuilder builder(rep.get());
  Links links;
  SEMMAP_RETURN_IF_ERROR(
      ReadModules(doc, rep->schema_version, &builder, &links, options.max_modules));
  SEMMAP_RETURN_IF_ERROR(LinkModules(origin, version, links, m, *rep, &builder));
  return m;
}

// Long (about 65 lines): the outline, the document of the rest, each module
// parsed and read, the pages given back behind each pass, then the links.
// Any error is the one-document reading's to word.
absl::StatusOr<Manifest> ManifestReader::ReadOutlined(absl::string_view text,
                                                      absl::string_view origin,
                                                      const ManifestOptions& options,
                                                      const MappedFile* mapped) {
  const absl::Status hand_over = absl::UnavailableError(
      absl::StrCat(origin, ": the outlined reading hands over to the one-document reading"));
  if (text.empty() || text.size() > options.max_file_bytes ||
      text.size() >= simdjson::SIMDJSON_MAXSIZE_BYTES) {
    return hand_over;
  }
  std::size_t released = 0;
  const auto release = [&](std::size_t upto) {
    if (mapped != nullptr && upto > released) mapped->Release(released, upto);
    released = upto;
  };
  std::optional<JsonOutline> outline = OutlineJson(text, "modules", kMaxJsonNesting, release);
  release(text.size());
  // The modules' pass maps the pages in again, a piece at a time.
  released = 0;
  if (!outline || outline->elements.empty() || outline->elements.size() > options.max_modules) {
    return hand_over;
  }
  const JsonLimits limits{options.max_file_bytes, kMaxJsonNesting};
  auto rep = std::make_shared<ManifestRep>();
  std::optional<JsonDocument> top;
  {
    // The document of the rest, whose modules read as [].
    const JsonRange modules = outline->members[outline->array_member].value;
    const std::string rest = absl::StrCat(text.substr(0, modules.begin), "[]",
                                          text.substr(modules.end));
    SEMMAP_ASSIGN_OR_RETURN(JsonDocument parsed, JsonDocument::Parse(rest, origin, limits));
    top.emplace(std::move(parsed));
  }
  const JsonValue doc = top->root();
  SEMMAP_ASSIGN_OR_RETURN(const JsonValue version, ReadTop(doc, origin, rep.get()));
  Manifest m(rep);
  ManifestBuilder builder(rep.get());
  Links links;
  StringBlocks keeper;  // the links' strings outlive each module's document
  links.keeper = &keeper;
  const std::vector<JsonRange>& elements = outline->elements;
  links.parent.reserve(elements.size());
  links.first_child.reserve(elements.size() + 1);
  links.first_child.push_back(0);
  std::optional<JsonDocument> module;
  std::vector<std::int64_t> shape;  // scratch for each tensor's
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const absl::string_view piece =
        text.substr(elements[i].begin, elements[i].end - elements[i].begin);
    if (module) {
      SEMMAP_RETURN_IF_ERROR(module->Reparse(piece));
    } else {
      SEMMAP_ASSIGN_OR_RETURN(JsonDocument parsed, JsonDocument::Parse(piece, origin, limits));
      module.emplace(std::move(parsed));
    }
    SEMMAP_RETURN_IF_ERROR(
        ReadModule(module->root(), i, rep->schema_version, &builder, &links, &shape));
    if (elements[i].begin - released >= kReleaseBytes) release(elements[i].begin);
  }
  release(text.size());
  module.reset();
  outline.reset();
  SEMMAP_RETURN_IF_ERROR(LinkModules(origin, version, links, m, *rep, &builder));
  return m;
}

}  // namespace internal

absl::StatusOr<Manifest> Manifest::Load(const std::string& path,
                                        const ManifestOptions& options) try {
  using internal::ManifestReader;
  absl::StatusOr<internal::MappedFile> mapped =
      internal::MappedFile::Open(path, options.max_file_bytes);
  if (mapped.ok()) {
    absl::StatusOr<Manifest> m = ManifestReader::Read(mapped->bytes(), path, options,
                                                      ManifestReader::Way::kAny, nullptr, &*mapped);
    SEMMAP_RETURN_IF_ERROR(internal::NotTruncated(*mapped, path));
    return m;
  }
  // Read instead, with the reader's padding (parsed in place, never copied),
  // and with the reading's own errors.
  SEMMAP_ASSIGN_OR_RETURN(std::string text,
                          internal::ReadFile(path, options.max_file_bytes, internal::kJsonPadding));
  return ManifestReader::Read(text, path, options, ManifestReader::Way::kAny, &text);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(path, "loading the manifest");
} catch (const std::length_error&) {
  return internal::OutOfMemory(path, "loading the manifest");
}

absl::StatusOr<Manifest> Manifest::Parse(absl::string_view text,
                                         absl::string_view origin,
                                         const ManifestOptions& options) try {
  return internal::ManifestReader::Read(text, origin, options,
                                        internal::ManifestReader::Way::kAny);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the manifest");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the manifest");
}

}  // namespace semmap
