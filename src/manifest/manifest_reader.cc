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
#include "io/json_reader.h"
#include "manifest/manifest_rep.h"

namespace semmap {
namespace {

using internal::JsonValue;
using internal::ManifestBuilder;
using internal::ManifestRep;

constexpr int kMaxJsonNesting = 256;
// A module's forward events (schema "maxItems"): the writer leaves a longer
// forward out rather than write it.
constexpr std::size_t kMaxForwardEvents = 10000;

// What a module says of its parent and children, as views of the JSON
// document's strings; resolved once every module is known.
struct Links {
  std::vector<absl::string_view> parent;  // per module; unused for the root
  std::vector<absl::string_view> children;  // every module's, back to back
  std::vector<std::size_t> first_child;     // per module, plus the end
  // Forward calls (schema version 2): module, event index, callee path.
  struct Call {
    std::size_t module;
    std::size_t event;
    absl::string_view path;
  };
  std::vector<Call> calls;
};

// The schema lets a module, a tensor and a forward event hold only the
// fields it names (additionalProperties: false): anything else is refused.
absl::Status OnlyFields(const JsonValue& object, absl::Span<const absl::string_view> keys) {
  return object.ForEachField([&](absl::string_view key, const JsonValue&) -> absl::Status {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return absl::OkStatus();
    return object.ErrorAt(key, absl::StrCat("unknown field \"", internal::Abbreviate(std::string(key)),
                                            "\" (the schema allows no other fields here)"));
  });
}

// A module's "forward" events (schema version 2): {"call": path} or
// {"op": name, "reads": [names]}, at most kMaxForwardEvents of them; each
// name read is one of the module's own parameters or buffers (read before
// this), once. Callees are resolved once every module is known
// (links->calls).
absl::Status ReadForward(const JsonValue& list, std::size_t i, ManifestBuilder* builder,
                         Links* links) {
  if (!list.is_array()) return list.Error(absl::StrCat("expected an array, found ", list.type_name()));
  if (list.size() > kMaxForwardEvents) {
    return list.Error(absl::StrCat(list.size(), " events, above the schema's limit of ",
                                   kMaxForwardEvents, " (the writer leaves such a forward out)"));
  }
  builder->StartForward();
  // The module's own tensors, for the names its operations read.
  const absl::Span<const TensorSpec> own = builder->LastTensors();
  // A module holds a few tensors and an operation reads fewer: lists are
  // searched. Past kSearched entries, hashed (a hostile file's million
  // names would otherwise cost a million squared comparisons).
  constexpr std::size_t kSearched = 16;
  absl::flat_hash_set<absl::string_view> own_set;
  if (own.size() > kSearched) {
    for (const TensorSpec& t : own) own_set.insert(t.name);
  }
  const auto owned = [&](absl::string_view name) {
    if (own.size() > kSearched) return own_set.contains(name);
    return std::any_of(own.begin(), own.end(), [&](const TensorSpec& t) { return t.name == name; });
  };
  std::vector<absl::string_view> reads;
  absl::flat_hash_set<absl::string_view> read_set;  // reads, once they are many
  std::size_t event = 0;
  return list.ForEachElement([&](const JsonValue& e) -> absl::Status {
    if (!e.is_object()) return e.Error("expected an object");
    static constexpr absl::string_view kKeys[] = {"call", "op", "reads"};
    SEMMAP_RETURN_IF_ERROR(OnlyFields(e, kKeys));
    std::optional<JsonValue> f[3];
    e.Lookup(kKeys, absl::MakeSpan(f));
    if (f[0].has_value() == f[1].has_value()) {
      return e.Error("expected exactly one of \"call\" and \"op\"");
    }
    if (f[0]) {
      if (f[2]) return f[2]->Error("\"reads\" goes with an \"op\", not a \"call\"");
      SEMMAP_ASSIGN_OR_RETURN(absl::string_view callee, f[0]->AsString(/*allow_empty=*/true));
      links->calls.push_back({i, event++, callee});
      builder->AddCall();
      return absl::OkStatus();
    }
    SEMMAP_ASSIGN_OR_RETURN(absl::string_view op, f[1]->AsString(/*allow_empty=*/false));
    reads.clear();
    read_set.clear();
    if (f[2]) {
      const JsonValue& list_of_reads = *f[2];
      if (!list_of_reads.is_array()) return list_of_reads.Error("expected an array");
      if (list_of_reads.size() == 0) {
        return list_of_reads.Error("must not be empty (left out when nothing is read)");
      }
      SEMMAP_RETURN_IF_ERROR(list_of_reads.ForEachElement([&](const JsonValue& r) -> absl::Status {
        SEMMAP_ASSIGN_OR_RETURN(absl::string_view name, r.AsString(/*allow_empty=*/false));
        if (!owned(name)) {
          return r.Error(absl::StrCat("\"", internal::Abbreviate(std::string(name)),
                                      "\" is not a parameter or buffer of this module"));
        }
        if (reads.size() == kSearched) read_set.insert(reads.begin(), reads.end());
        const bool twice = reads.size() < kSearched
                               ? std::find(reads.begin(), reads.end(), name) != reads.end()
                               : !read_set.insert(name).second;
        if (twice) {
          return r.Error(absl::StrCat("\"", internal::Abbreviate(std::string(name)),
                                      "\" is listed twice"));
        }
        reads.push_back(name);
        return absl::OkStatus();
      }));
    }
    ++event;
    builder->AddOp(op, reads);
    return absl::OkStatus();
  });
}

absl::Status ReadTensors(const JsonValue& module, absl::string_view key,
                         const std::optional<JsonValue>& field, bool buffers,
                         ManifestBuilder* builder, std::vector<std::int64_t>* shape) {
  if (!field) return module.Error(absl::StrCat("missing required field \"", key, "\""));
  const JsonValue& list = *field;
  if (!list.is_array()) {
    return list.Error(absl::StrCat("expected an array, found ", list.type_name()));
  }
  return list.ForEachElement([&](const JsonValue& t) -> absl::Status {
    if (!t.is_object()) return t.Error("expected an object");
    static constexpr absl::string_view kKeys[] = {"name", "dtype", "shape"};
    SEMMAP_RETURN_IF_ERROR(OnlyFields(t, kKeys));
    std::optional<JsonValue> f[3];
    t.Lookup(kKeys, absl::MakeSpan(f));
    if (!f[0]) return t.Error("missing required field \"name\"");
    SEMMAP_ASSIGN_OR_RETURN(absl::string_view name, f[0]->AsString(false));
    if (!f[1]) return t.Error("missing required field \"dtype\"");
    SEMMAP_ASSIGN_OR_RETURN(absl::string_view dtype, f[1]->AsString(false));
    if (!f[2]) return t.Error("missing required field \"shape\"");
    const JsonValue& dims = *f[2];
    if (!dims.is_array()) return dims.Error("expected an array");
    shape->clear();
    SEMMAP_RETURN_IF_ERROR(dims.ForEachElement([shape](const JsonValue& dim) -> absl::Status {
      // An integer above INT64_MAX is unsigned: not a dimension either.
      if (!dim.is_integer() || dim.is_unsigned() || dim.int64() < 0) {
        return dim.Error("expected a non-negative integer");
      }
      shape->push_back(dim.int64());
      return absl::OkStatus();
    }));
    builder->AddTensor(buffers, name, *shape, dtype);
    return absl::OkStatus();
  });
}

// One module object, fields checked in schema order (path, class,
// qualified_class, parent, children, parameters, buffers; from schema
// version 2, forward).
absl::Status ReadModule(const JsonValue& m, std::size_t i, int version, ManifestBuilder* builder,
                        Links* links, std::vector<std::int64_t>* shape) {
  if (!m.is_object()) return m.Error("expected an object");
  static constexpr absl::string_view kKeys[] = {"path",     "class",      "qualified_class",
                                                "parent",   "children",   "parameters",
                                                "buffers",  "forward"};
  SEMMAP_RETURN_IF_ERROR(OnlyFields(m, kKeys));
  std::optional<JsonValue> f[8];
  m.Lookup(kKeys, absl::MakeSpan(f));
  absl::string_view text[3];
  for (int k = 0; k < 3; ++k) {
    if (!f[k]) return m.Error(absl::StrCat("missing required field \"", kKeys[k], "\""));
    SEMMAP_ASSIGN_OR_RETURN(text[k], f[k]->AsString(/*allow_empty=*/k == 0));
  }
  builder->AddModule(text[0], text[1], text[2]);
  if (!f[3]) return m.Error("missing required field \"parent\"");
  const JsonValue& parent = *f[3];
  absl::string_view parent_path;
  if (parent.is_null()) {
    if (i != 0 || !text[0].empty()) {
      return parent.Error("only the root (the first module, path \"\") has no parent");
    }
  } else if (parent.is_string()) {
    if (i == 0) return parent.Error("the root module must have parent null");
    parent_path = parent.string();
  } else {
    return parent.Error("expected a string or null");
  }
  links->parent.push_back(parent_path);
  if (!f[4]) return m.Error("missing required field \"children\"");
  const JsonValue& children = *f[4];
  if (!children.is_array()) return children.Error("expected an array");
  SEMMAP_RETURN_IF_ERROR(children.ForEachElement([links](const JsonValue& c) -> absl::Status {
    if (!c.is_string()) return c.Error("expected a string");
    links->children.push_back(c.string());
    return absl::OkStatus();
  }));
  links->first_child.push_back(links->children.size());
  SEMMAP_RETURN_IF_ERROR(ReadTensors(m, "parameters", f[5], false, builder, shape));
  SEMMAP_RETURN_IF_ERROR(ReadTensors(m, "buffers", f[6], true, builder, shape));
  if (f[7]) {
    if (version < 2) {
      return f[7]->Error(
          "a forward signature needs schema_version 2 (this file says 1, whose readers ignore it)");
    }
    SEMMAP_RETURN_IF_ERROR(ReadForward(*f[7], i, builder, links));
  }
  return absl::OkStatus();
}

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
    return ReadModule(m, index, version, builder, links, &shape);
  });
}

}  // namespace

absl::StatusOr<Manifest> Manifest::Load(const std::string& path,
                                        const ManifestOptions& options) try {
  // Read with the reader's padding: parsed in place, never copied.
  SEMMAP_ASSIGN_OR_RETURN(std::string text,
                          internal::ReadFile(path, options.max_file_bytes, internal::kJsonPadding));
  return ParseText(text, path, options, &text);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(path, "loading the manifest");
} catch (const std::length_error&) {
  return internal::OutOfMemory(path, "loading the manifest");
}

absl::StatusOr<Manifest> Manifest::Parse(absl::string_view text,
                                         absl::string_view origin,
                                         const ManifestOptions& options) try {
  return ParseText(text, origin, options, nullptr);
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "loading the manifest");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "loading the manifest");
}

namespace {

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

}  // namespace

// Long (about 85 lines): the top-level fields in the schema's order, each
// checked where it is read so that every error names its JSON pointer,
// then the modules read, indexed and linked.
absl::StatusOr<Manifest> Manifest::ParseText(absl::string_view text, absl::string_view origin,
                                             const ManifestOptions& options, std::string* owned) {
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": empty file, expected a JSON manifest"));
  }
  const bool padded = owned != nullptr && owned->data() == text.data() &&
                      owned->capacity() >= text.size() + internal::kJsonPadding;
  SEMMAP_ASSIGN_OR_RETURN(
      const internal::JsonDocument json,
      internal::JsonDocument::Parse(text, origin, {options.max_file_bytes, kMaxJsonNesting},
                                    padded));
  // The document holds its own copies of the strings: the text can go.
  if (owned != nullptr) std::string().swap(*owned);
  const JsonValue doc = json.root();
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
  auto rep = std::make_shared<ManifestRep>();
  // The manifest being built: its lookups work once the paths are indexed.
  Manifest m(rep);
  ManifestBuilder builder(rep.get());
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
        config->ForEachField([&rep](absl::string_view key, const JsonValue& value) -> absl::Status {
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
  Links links;
  SEMMAP_RETURN_IF_ERROR(
      ReadModules(doc, rep->schema_version, &builder, &links, options.max_modules));
  if (rep->schema_version == 2 &&
      std::none_of(rep->modules.begin(), rep->modules.end(),
                   [](const internal::ModuleRecord& r) { return r.traced; })) {
    return version->Error(
        "version 2 needs a \"forward\" on at least one module (a file without forward "
        "signatures is version 1)");
  }
  if (rep->modules[0].path_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": /modules/0/path: the first module must be the root, path \"\""));
  }
  SEMMAP_RETURN_IF_ERROR(builder.IndexPaths(origin));
  // Resolve parent and children links and check they agree.
  SEMMAP_RETURN_IF_ERROR(LinkParents(origin, links, m, *rep, &builder));
  SEMMAP_RETURN_IF_ERROR(LinkChildren(origin, links, m, *rep, &builder));
  SEMMAP_RETURN_IF_ERROR(LinkCalls(origin, links, m, &builder));
  builder.FinishLinks();
  return m;
}

}  // namespace semmap
