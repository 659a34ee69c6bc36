#include "graph/model_metadata_edit.h"

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "graph/onnx_fields.h"
#include "graph/wire_reader.h"
#include "graph/wire_writer.h"

namespace semmap {
namespace internal {
namespace {

// The key of a StringStringEntryProto, or nullopt-like empty with `ok`
// false when it does not parse (such an entry is never removed).
bool EntryKey(absl::string_view entry, absl::string_view* key) {
  WireReader r(entry);
  WireField f;
  bool found = false;
  while (r.Next(&f)) {
    if (f.number == kEntryKey && IsLen(f)) {
      *key = f.bytes;  // protobuf keeps the last one
      found = true;
    }
  }
  return r.ok() && found;
}

}  // namespace

// The main graph's doc_string as protobuf reads it: the last one of the
// last GraphProto holding one (graphs occurring more than once merge).
absl::Status CurrentGraphDoc(absl::string_view model, absl::string_view origin,
                             const std::vector<absl::string_view>& graphs,
                             absl::string_view* doc) {
  for (absl::string_view g : graphs) {
    WireReader r(g);
    WireField f;
    while (r.Next(&f)) {
      if (f.number == graph_field::kDocString && IsLen(f)) *doc = f.bytes;
    }
    if (!r.ok()) return MalformedOnnx(origin, model, r, "GraphProto");
  }
  return absl::OkStatus();
}

// The pieces of GraphProto `graph` without its doc_string fields.
absl::Status GraphWithoutDoc(absl::string_view model, absl::string_view origin,
                             absl::string_view graph, std::vector<absl::string_view>* pieces) {
  WireReader r(graph);
  WireField f;
  const char* kept_from = graph.data();
  const char* field_start = r.position();
  while (r.Next(&f)) {
    const char* field_end = r.position();
    if (f.number == graph_field::kDocString && IsLen(f)) {
      if (field_start > kept_from) {
        pieces->emplace_back(kept_from, static_cast<std::size_t>(field_start - kept_from));
      }
      kept_from = field_end;
    }
    field_start = field_end;
  }
  if (!r.ok()) return MalformedOnnx(origin, model, r, "GraphProto");
  const char* end = graph.data() + graph.size();
  if (end > kept_from) pieces->emplace_back(kept_from, static_cast<std::size_t>(end - kept_from));
  return absl::OkStatus();
}

// About 70 lines: one walk over the model's top-level fields, dropping
// entries and, with a doc edit, rebuilding its last graph from views.
absl::StatusOr<ModelMetadataEdit> PlanModelMetadataEdit(
    absl::string_view model, absl::string_view origin, absl::string_view drop_key,
    const std::vector<std::pair<std::string, std::string>>& add, const GraphDocEdit& graph_doc) {
  ModelMetadataEdit edit;
  std::vector<absl::string_view> graphs;
  const char* last_graph_field = nullptr;  // the tag of the last graph field
  if (graph_doc) {
    WireReader r(model);
    WireField f;
    for (const char* at = r.position(); r.Next(&f); at = r.position()) {
      if (f.number == model_field::kGraph && IsLen(f)) {
        graphs.push_back(f.bytes);
        last_graph_field = at;
      }
    }
    if (!r.ok()) return MalformedOnnx(origin, model, r, "ModelProto");
  }
  WireReader r(model);
  WireField f;
  const char* kept_from = r.position();
  const char* field_start = r.position();
  const auto keep_until = [&](const char* at) {
    if (at > kept_from) {
      edit.pieces.emplace_back(kept_from, static_cast<std::size_t>(at - kept_from));
    }
  };
  while (r.Next(&f)) {
    const char* field_end = r.position();
    absl::string_view key;
    if (f.number == model_field::kMetadataProps && IsLen(f) && EntryKey(f.bytes, &key) &&
        key == drop_key) {
      keep_until(field_start);
      kept_from = field_end;
      ++edit.removed;
    } else if (field_start == last_graph_field) {
      absl::string_view current;
      SEMMAP_RETURN_IF_ERROR(CurrentGraphDoc(model, origin, graphs, &current));
      auto doc = std::make_unique<std::string>();
      const std::string text = graph_doc(current);
      if (!text.empty()) AppendLenField(doc.get(), graph_field::kDocString, text);
      std::vector<absl::string_view> body;
      SEMMAP_RETURN_IF_ERROR(GraphWithoutDoc(model, origin, f.bytes, &body));
      std::uint64_t length = doc->size();
      for (absl::string_view p : body) length += p.size();
      auto header = std::make_unique<std::string>();
      AppendLenHeader(header.get(), model_field::kGraph, length);
      keep_until(field_start);
      edit.pieces.emplace_back(*header);
      edit.pieces.insert(edit.pieces.end(), body.begin(), body.end());
      if (!doc->empty()) edit.pieces.emplace_back(*doc);
      edit.owned.push_back(std::move(header));
      edit.owned.push_back(std::move(doc));
      kept_from = field_end;
    }
    field_start = field_end;
  }
  if (!r.ok()) return MalformedOnnx(origin, model, r, "ModelProto");
  keep_until(model.data() + model.size());
  auto appended = std::make_unique<std::string>();
  for (const auto& [key, value] : add) {
    std::string entry;
    AppendLenField(&entry, kEntryKey, key);
    AppendLenField(&entry, kEntryValue, value);
    AppendLenField(appended.get(), model_field::kMetadataProps, entry);
  }
  if (!appended->empty()) edit.pieces.emplace_back(*appended);
  edit.owned.push_back(std::move(appended));
  for (absl::string_view p : edit.pieces) edit.size += p.size();
  return edit;
}

}  // namespace internal
}  // namespace semmap
