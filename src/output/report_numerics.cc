#include "output/report_numerics.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/out_of_memory.h"
#include "base/status_macros.h"
#include "base/text.h"
#include "io/file_io.h"
#include "io/json_reader.h"

namespace semmap {
namespace {

using internal::JsonDocument;
using internal::JsonValue;
using internal::JsonWriter;

constexpr absl::string_view kFormat = "semmap.numerics";
constexpr std::int64_t kVersion = 1;
// The document nests objects in lists in objects a few levels deep.
constexpr int kMaxNesting = 32;

// A figure: a number, or null / absent (NaN).
absl::StatusOr<double> Figure(const JsonValue& object, absl::string_view key) {
  const std::optional<JsonValue> v = object.Find(key);
  if (!v || v->is_null()) return NumericsRow::kNone;
  if (!v->is_number()) {
    return object.ErrorAt(key, absl::StrCat("expected a number or null, found ", v->type_name()));
  }
  return v->number();
}

// A string field; absent or null is "" unless `required`.
absl::StatusOr<std::string> Text(const JsonValue& object, absl::string_view key, bool required) {
  const std::optional<JsonValue> v = object.Find(key);
  if (!v || (v->is_null() && !required)) {
    if (required) return object.ErrorAt(key, absl::StrCat("missing required field \"", key, "\""));
    return std::string();
  }
  if (!v->is_string()) {
    return object.ErrorAt(key, absl::StrCat("expected a string, found ", v->type_name()));
  }
  return std::string(v->string());
}

// The figures of an "output_error" or "local_error" object (or null).
absl::Status ReadError(const JsonValue& row, absl::string_view key, NumericsRow* out, bool local) {
  const std::optional<JsonValue> e = row.Find(key);
  if (!e || e->is_null()) return absl::OkStatus();
  if (!e->is_object()) {
    return row.ErrorAt(key, absl::StrCat("expected an object or null, found ", e->type_name()));
  }
  SEMMAP_ASSIGN_OR_RETURN(const double rel_l2, Figure(*e, "rel_l2"));
  if (local) {
    out->local_rel_l2 = rel_l2;
    return absl::OkStatus();
  }
  out->output_rel_l2 = rel_l2;
  SEMMAP_ASSIGN_OR_RETURN(out->sqnr_db, Figure(*e, "sqnr_db"));
  SEMMAP_ASSIGN_OR_RETURN(out->cosine, Figure(*e, "cosine"));
  SEMMAP_ASSIGN_OR_RETURN(out->max_abs, Figure(*e, "max_abs"));
  return absl::OkStatus();
}

absl::StatusOr<NumericsRow> ReadRow(const JsonValue& row) {
  if (!row.is_object()) return row.Error(absl::StrCat("expected an object, found ", row.type_name()));
  NumericsRow out;
  SEMMAP_ASSIGN_OR_RETURN(out.module, Text(row, "module", true));
  SEMMAP_ASSIGN_OR_RETURN(out.class_name, Text(row, "class", false));
  SEMMAP_ASSIGN_OR_RETURN(const JsonValue rank, row.Field("rank"));
  if (!rank.is_null()) {
    if (!rank.is_integer() || rank.is_unsigned() || rank.int64() < 1 || rank.int64() > INT32_MAX) {
      return rank.Error("expected a rank (1, 2, ...) or null");
    }
    out.rank = static_cast<int>(rank.int64());
  }
  if (const std::optional<JsonValue> order = row.Find("order"); order && !order->is_null()) {
    if (!order->is_integer() || order->is_unsigned()) return order->Error("expected an integer");
    out.order = order->int64();
  }
  SEMMAP_ASSIGN_OR_RETURN(out.added_error, Figure(row, "added_error"));
  SEMMAP_ASSIGN_OR_RETURN(out.input_error, Figure(row, "input_error"));
  SEMMAP_ASSIGN_OR_RETURN(out.impact, Figure(row, "impact"));
  SEMMAP_RETURN_IF_ERROR(ReadError(row, "output_error", &out, /*local=*/false));
  SEMMAP_RETURN_IF_ERROR(ReadError(row, "local_error", &out, /*local=*/true));
  if (const std::optional<JsonValue> v = row.Find("introduces_nonfinite"); v && !v->is_null()) {
    if (!v->is_boolean()) return v->Error(absl::StrCat("expected a boolean, found ", v->type_name()));
    out.introduces_nonfinite = v->boolean();
  }
  if (const std::optional<JsonValue> fused = row.Find("fused"); fused && !fused->is_null()) {
    if (!fused->is_array()) return fused->Error(absl::StrCat("expected an array, found ", fused->type_name()));
    SEMMAP_RETURN_IF_ERROR(fused->ForEachElement([&](const JsonValue& m) -> absl::Status {
      SEMMAP_ASSIGN_OR_RETURN(const absl::string_view path, m.AsString(/*allow_empty=*/true));
      out.fused.emplace_back(path);
      return absl::OkStatus();
    }));
  }
  return out;
}

absl::Status ReadView(const JsonValue& views, absl::string_view name, std::vector<NumericsRow>* out) {
  SEMMAP_ASSIGN_OR_RETURN(const JsonValue list, views.Field(name));
  if (!list.is_array()) return list.Error(absl::StrCat("expected an array, found ", list.type_name()));
  out->reserve(list.size());
  return list.ForEachElement([&](const JsonValue& row) -> absl::Status {
    SEMMAP_ASSIGN_OR_RETURN(NumericsRow r, ReadRow(row));
    out->push_back(std::move(r));
    return absl::OkStatus();
  });
}

absl::StatusOr<ReportNumerics> ReadDocument(const JsonValue& root) {
  if (!root.is_object()) return root.Error(absl::StrCat("expected an object, found ", root.type_name()));
  const std::optional<JsonValue> format = root.Find("format");
  if (!format || !format->is_string() || format->string() != kFormat) {
    const std::string found = !format ? "no \"format\""
                              : format->is_string()
                                  ? absl::StrCat("format \"", internal::Abbreviate(format->string()), "\"")
                                  : absl::StrCat("a format of type ", format->type_name());
    return root.ErrorAt("format", absl::StrCat("not a \"", kFormat, "\" document (", found,
                                               "); write one with semmap compare-numerics --json"));
  }
  const std::optional<JsonValue> version = root.Find("version");
  if (!version || !version->is_integer() || version->is_unsigned() || version->int64() != kVersion) {
    const std::string found = !version ? "none"
                              : version->is_number() ? version->Dump()
                                                     : std::string(version->type_name());
    return root.ErrorAt("version", absl::StrCat("version ", found, ", this semmap reads ", kFormat,
                                                " version ", kVersion));
  }
  ReportNumerics out;
  for (auto [key, path] : {std::pair<absl::string_view, std::string*>{"reference", &out.reference_path},
                           {"deployed", &out.deployed_path}}) {
    SEMMAP_ASSIGN_OR_RETURN(const JsonValue side, root.Field(key));
    if (!side.is_object()) return side.Error(absl::StrCat("expected an object, found ", side.type_name()));
    SEMMAP_ASSIGN_OR_RETURN(*path, Text(side, "path", true));
  }
  SEMMAP_ASSIGN_OR_RETURN(out.provider, Text(root, "provider", false));
  if (const std::optional<JsonValue> inputs = root.Find("inputs"); inputs && inputs->is_object()) {
    SEMMAP_ASSIGN_OR_RETURN(out.inputs_note, Text(*inputs, "note", false));
  }
  out.leaf_ranked_by = "added";
  if (const std::optional<JsonValue> by = root.Find("ranked_by"); by && by->is_object()) {
    SEMMAP_ASSIGN_OR_RETURN(std::string leaf, Text(*by, "leaf", false));
    if (leaf != "added" && leaf != "local" && !leaf.empty()) {
      return by->ErrorAt("leaf", "expected \"added\" or \"local\"");
    }
    if (!leaf.empty()) out.leaf_ranked_by = std::move(leaf);
  }
  SEMMAP_ASSIGN_OR_RETURN(out.final_error, Figure(root, "final_error"));
  SEMMAP_ASSIGN_OR_RETURN(const JsonValue views, root.Field("views"));
  if (!views.is_object()) return views.Error(absl::StrCat("expected an object, found ", views.type_name()));
  SEMMAP_RETURN_IF_ERROR(ReadView(views, "leaf", &out.leaf));
  SEMMAP_RETURN_IF_ERROR(ReadView(views, "subtree", &out.subtree));
  return out;
}

// A figure, null when NaN or infinite (as the document writes them).
void FigureValue(JsonWriter& w, double value) {
  if (std::isfinite(value)) {
    w.Number(value);
  } else {
    w.Null();
  }
}

template <typename Fn>
void Column(JsonWriter& w, const std::vector<NumericsRow>& rows, Fn value) {
  w.BeginArray();
  for (const NumericsRow& r : rows) value(r);
  w.EndArray();
}

// One view's rows, one array per field (keys sorted).
void WriteView(JsonWriter& w, const std::vector<NumericsRow>& rows, const ModuleTree& tree) {
  std::vector<int> index;
  index.reserve(rows.size());
  for (const NumericsRow& r : rows) index.push_back(tree.find(r.module));
  w.BeginObject();
  Column(w.Key("added"), rows, [&](const NumericsRow& r) { FigureValue(w, r.added_error); });
  Column(w.Key("class"), rows, [&](const NumericsRow& r) { w.String(r.class_name); });
  Column(w.Key("cosine"), rows, [&](const NumericsRow& r) { FigureValue(w, r.cosine); });
  Column(w.Key("fused"), rows, [&](const NumericsRow& r) { w.Strings(r.fused); });
  Column(w.Key("impact"), rows, [&](const NumericsRow& r) { FigureValue(w, r.impact); });
  Column(w.Key("in"), rows, [&](const NumericsRow& r) { FigureValue(w, r.input_error); });
  Column(w.Key("local"), rows, [&](const NumericsRow& r) { FigureValue(w, r.local_rel_l2); });
  w.Key("m").BeginArray();
  for (int m : index) w.Integer(m);
  w.EndArray();
  Column(w.Key("max_abs"), rows, [&](const NumericsRow& r) { FigureValue(w, r.max_abs); });
  // A module of the tree is named by `m` alone (modules.path holds it).
  w.Key("module").BeginArray();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (index[r] >= 0) {
      w.Null();
    } else {
      w.String(rows[r].module);
    }
  }
  w.EndArray();
  Column(w.Key("nonfinite"), rows, [&](const NumericsRow& r) { w.Integer(r.introduces_nonfinite ? 1 : 0); });
  Column(w.Key("order"), rows, [&](const NumericsRow& r) { w.Integer(r.order); });
  Column(w.Key("out"), rows, [&](const NumericsRow& r) { FigureValue(w, r.output_rel_l2); });
  Column(w.Key("rank"), rows, [&](const NumericsRow& r) {
    if (r.rank > 0) {
      w.Integer(r.rank);
    } else {
      w.Null();
    }
  });
  Column(w.Key("sqnr"), rows, [&](const NumericsRow& r) { FigureValue(w, r.sqnr_db); });
  w.EndObject();
}

bool SameFile(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  if (a == b) return true;
  std::error_code error;
  return std::filesystem::equivalent(a, b, error) && !error;
}

}  // namespace

absl::StatusOr<ReportNumerics> ReadReportNumerics(const std::string& path,
                                                  std::uint64_t max_bytes) try {
  SEMMAP_ASSIGN_OR_RETURN(const std::string text,
                          internal::ReadFile(path, max_bytes, internal::kJsonPadding));
  SEMMAP_ASSIGN_OR_RETURN(const JsonDocument doc,
                          JsonDocument::Parse(text, path, {max_bytes, kMaxNesting},
                                              /*text_is_padded=*/true));
  return ReadDocument(doc.root());
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(path, "reading the numerics");
} catch (const std::length_error&) {
  return internal::OutOfMemory(path, "reading the numerics");
}

absl::StatusOr<ReportNumerics> ParseReportNumerics(absl::string_view text,
                                                   absl::string_view origin,
                                                   std::uint64_t max_bytes) try {
  SEMMAP_ASSIGN_OR_RETURN(const JsonDocument doc,
                          JsonDocument::Parse(text, origin, {max_bytes, kMaxNesting}));
  return ReadDocument(doc.root());
} catch (const std::bad_alloc&) {
  return internal::OutOfMemory(origin, "reading the numerics");
} catch (const std::length_error&) {
  return internal::OutOfMemory(origin, "reading the numerics");
}

namespace internal {

std::string NumericsSide(const ReportNumerics& numerics, const std::string& model_path) {
  if (SameFile(model_path, numerics.deployed_path)) return "deployed";
  if (SameFile(model_path, numerics.reference_path)) return "reference";
  return "";
}

void WriteNumericsData(JsonWriter& w, const ReportNumerics& numerics, const ModuleTree& tree,
                       const std::string& numerics_path, const std::string& model_path) {
  w.BeginObject();
  w.Key("deployed").String(numerics.deployed_path);
  FigureValue(w.Key("final_error"), numerics.final_error);
  w.Key("inputs").String(numerics.inputs_note);
  w.Key("leaf");
  WriteView(w, numerics.leaf, tree);
  w.Key("leaf_ranked_by").String(numerics.leaf_ranked_by);
  w.Key("path").String(numerics_path);
  w.Key("provider").String(numerics.provider);
  w.Key("reference").String(numerics.reference_path);
  w.Key("side").StringOrNull(NumericsSide(numerics, model_path));
  w.Key("subtree");
  WriteView(w, numerics.subtree, tree);
  w.EndObject();
}

}  // namespace internal
}  // namespace semmap
