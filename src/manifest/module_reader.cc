#include "manifest/module_reader.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/text.h"

namespace semmap {
namespace internal {

namespace {

// A module's forward events (schema "maxItems"): the writer leaves a longer
// forward out rather than write it.
constexpr std::size_t kMaxForwardEvents = 10000;

// The schema lets a module, a tensor and a forward event hold only the
// fields it names (additionalProperties: false): anything else is refused.
absl::Status OnlyFields(const JsonValue& object, absl::Span<const absl::string_view> keys) {
  return object.ForEachField([&](absl::string_view key, const JsonValue&) -> absl::Status {
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return absl::OkStatus();
    return object.ErrorAt(key, absl::StrCat("unknown field \"", internal::Abbreviate(std::string(key)),
                                            "\" (the schema allows no other fields here)"));
  });
}

// An object holding no fields but `keys` (schema order): out[k] is the
// value of keys[k], as JsonValue::Lookup gives it.
absl::Status Fields(const JsonValue& object, absl::Span<const absl::string_view> keys,
                    absl::Span<std::optional<JsonValue>> out) {
  if (!object.is_object()) return object.Error("expected an object");
  SEMMAP_RETURN_IF_ERROR(OnlyFields(object, keys));
  object.Lookup(keys, out);
  return absl::OkStatus();
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
    static constexpr absl::string_view kKeys[] = {"call", "op", "reads"};
    std::optional<JsonValue> f[3];
    SEMMAP_RETURN_IF_ERROR(Fields(e, kKeys, absl::MakeSpan(f)));
    if (f[0].has_value() == f[1].has_value()) {
      return e.Error("expected exactly one of \"call\" and \"op\"");
    }
    if (f[0]) {
      if (f[2]) return f[2]->Error("\"reads\" goes with an \"op\", not a \"call\"");
      SEMMAP_ASSIGN_OR_RETURN(absl::string_view callee, f[0]->AsString(/*allow_empty=*/true));
      links->calls.push_back({i, event++, links->Keep(callee)});
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
    static constexpr absl::string_view kKeys[] = {"name", "dtype", "shape"};
    std::optional<JsonValue> f[3];
    SEMMAP_RETURN_IF_ERROR(Fields(t, kKeys, absl::MakeSpan(f)));
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

}  // namespace

absl::Status ReadModule(const JsonValue& m, std::size_t i, int version, ManifestBuilder* builder,
                        Links* links, std::vector<std::int64_t>* shape) {
  static constexpr absl::string_view kKeys[] = {"path",     "class",      "qualified_class",
                                                "parent",   "children",   "parameters",
                                                "buffers",  "forward"};
  std::optional<JsonValue> f[8];
  SEMMAP_RETURN_IF_ERROR(Fields(m, kKeys, absl::MakeSpan(f)));
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
  links->parent.push_back(links->Keep(parent_path));
  if (!f[4]) return m.Error("missing required field \"children\"");
  const JsonValue& children = *f[4];
  if (!children.is_array()) return children.Error("expected an array");
  SEMMAP_RETURN_IF_ERROR(children.ForEachElement([links](const JsonValue& c) -> absl::Status {
    if (!c.is_string()) return c.Error("expected a string");
    links->children.push_back(links->Keep(c.string()));
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


}  // namespace internal
}  // namespace semmap
