#include "graph/model_metadata_edit.h"

#include "absl/status/status.h"
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

absl::StatusOr<ModelMetadataEdit> PlanModelMetadataEdit(
    absl::string_view model, absl::string_view origin, absl::string_view drop_key,
    const std::vector<std::pair<std::string, std::string>>& add) {
  ModelMetadataEdit edit;
  edit.appended = std::make_unique<std::string>();
  WireReader r(model);
  WireField f;
  const char* kept_from = r.position();
  const char* field_start = r.position();
  while (r.Next(&f)) {
    const char* field_end = r.position();
    absl::string_view key;
    if (f.number == model_field::kMetadataProps && IsLen(f) && EntryKey(f.bytes, &key) &&
        key == drop_key) {
      if (field_start > kept_from) {
        edit.pieces.emplace_back(kept_from, static_cast<std::size_t>(field_start - kept_from));
      }
      kept_from = field_end;
      ++edit.removed;
    }
    field_start = field_end;
  }
  if (!r.ok()) return MalformedOnnx(origin, model, r, "ModelProto");
  const char* end = model.data() + model.size();
  if (end > kept_from) {
    edit.pieces.emplace_back(kept_from, static_cast<std::size_t>(end - kept_from));
  }
  for (const auto& [key, value] : add) {
    std::string entry;
    AppendLenField(&entry, kEntryKey, key);
    AppendLenField(&entry, kEntryValue, value);
    AppendLenField(edit.appended.get(), model_field::kMetadataProps, entry);
  }
  if (!edit.appended->empty()) edit.pieces.emplace_back(*edit.appended);
  for (absl::string_view p : edit.pieces) edit.size += p.size();
  return edit;
}

}  // namespace internal
}  // namespace semmap
