#include "graph/wire_messages.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace semmap {
namespace internal {

absl::Status WireSource::MalformedAt(const char* at, const char* what) const {
  return absl::InvalidArgumentError(
      absl::StrCat(origin, ": not a valid ONNX model: byte offset ",
                   static_cast<std::uint64_t>(at - file.data()), ": ", what));
}

absl::Status ReadModel(const WireSource& source, ModelFields* model) {
  WireReader r(source.file);
  WireField f;
  while (r.Next(&f)) {
    const bool len = IsLen(f);
    switch (f.number) {
      case model_field::kIrVersion:
        if (IsVarint(f)) model->ir_version = f.varint;
        break;
      case model_field::kProducerName:
        if (len) model->producer_name = f.bytes;
        break;
      case model_field::kProducerVersion:
        if (len) model->producer_version = f.bytes;
        break;
      case model_field::kDomain:
        if (len) model->domain = f.bytes;
        break;
      case model_field::kModelVersion:
        if (IsVarint(f)) model->model_version = f.varint;
        break;
      case model_field::kGraph:
        if (len) model->graph.push_back(f.bytes);
        break;
      case model_field::kOpsetImport:
        if (len) model->opset_imports.push_back(f.bytes);
        break;
      case model_field::kMetadataProps:
        if (len) model->metadata_props.push_back(f.bytes);
        break;
      case model_field::kFunctions:
        if (len) model->functions.push_back(f.bytes);
        break;
      default:
        break;
    }
  }
  return r.ok() ? absl::OkStatus() : source.Malformed(r, "ModelProto");
}

absl::Status ReadAttribute(const WireSource& source, absl::string_view bytes,
                           AttributeFields* a) {
  WireReader r(bytes);
  WireField f;
  while (r.Next(&f)) {
    switch (f.number) {
      case attribute_field::kName:
        if (IsLen(f)) a->name = f.bytes;
        break;
      case attribute_field::kType:
        if (IsVarint(f)) {
          const auto v = static_cast<std::int32_t>(f.varint);
          if (v >= 0 && v <= attribute_field::kMaxKnownType) a->type = v;
        }
        break;
      case attribute_field::kG:
        if (IsLen(f)) a->g.push_back(f.bytes);
        break;
      case attribute_field::kGraphs:
        if (IsLen(f)) a->graphs.push_back(f.bytes);
        break;
      default:
        break;
    }
  }
  return r.ok() ? absl::OkStatus() : source.Malformed(r, "AttributeProto");
}

namespace {

absl::Status ReadDims(const WireSource& source, const WireField& f,
                      std::vector<std::int64_t>* dims) {
  if (IsVarint(f)) {
    dims->push_back(static_cast<std::int64_t>(f.varint));
  } else if (IsLen(f) && !ForEachPackedVarint(f.bytes, [dims](std::uint64_t v) {
               dims->push_back(static_cast<std::int64_t>(v));
             })) {
    return source.MalformedAt(f.bytes.data(), "malformed packed dims in TensorProto");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ReadTensor(const WireSource& source, const Spans& spans, TensorFields* t,
                        std::vector<std::int64_t>* dims) {
  std::int32_t location = 0;
  for (absl::string_view span : spans) {
    t->bytes = span;
    WireReader r(span);
    WireField f;
    while (r.Next(&f)) {
      switch (f.number) {
        case tensor_field::kDims:
          if (dims != nullptr) SEMMAP_RETURN_IF_ERROR(ReadDims(source, f, dims));
          break;
        case tensor_field::kDataType:
          if (IsVarint(f)) t->elem_type = static_cast<std::int32_t>(f.varint);
          break;
        case tensor_field::kName:
          if (IsLen(f)) t->name = f.bytes;
          break;
        case tensor_field::kDataLocation:
          if (IsVarint(f)) {
            const auto v = static_cast<std::int32_t>(f.varint);
            if (v == 0 || v == tensor_field::kExternal) location = v;
          }
          break;
        case tensor_field::kExternalData:
          if (IsLen(f)) {
            MetadataEntry kv;
            SEMMAP_RETURN_IF_ERROR(ReadEntry(source, f.bytes, &kv));
            if (kv.first == "location") t->location = kv.second;
          }
          break;
        default:
          break;  // payloads (raw_data, *_data) skipped by length
      }
    }
    if (!r.ok()) return source.Malformed(r, "TensorProto");
  }
  t->external = location == tensor_field::kExternal;
  return absl::OkStatus();
}

absl::Status ReadSparseValues(const WireSource& source, absl::string_view bytes, Spans* values) {
  WireReader r(bytes);
  WireField f;
  while (r.Next(&f)) {
    if (f.number == kSparseValues && IsLen(f)) values->push_back(f.bytes);
  }
  return r.ok() ? absl::OkStatus() : source.Malformed(r, "SparseTensorProto");
}

absl::Status ReadValueInfo(const WireSource& source, absl::string_view bytes,
                           absl::string_view* name, bool* typed) {
  *name = absl::string_view();
  *typed = false;
  WireReader r(bytes);
  WireField f;
  while (r.Next(&f)) {
    if (f.number == kValueInfoName && IsLen(f)) *name = f.bytes;
    if (f.number == kValueInfoType && IsLen(f)) *typed = true;
  }
  return r.ok() ? absl::OkStatus() : source.Malformed(r, "ValueInfoProto");
}

namespace {

bool ReadEntryWith(WireReader* r, MetadataEntry* kv) {
  WireField f;
  while (r->Next(&f)) {
    if (!IsLen(f)) continue;
    if (f.number == kEntryKey) kv->first = f.bytes;
    if (f.number == kEntryValue) kv->second = f.bytes;
  }
  return r->ok();
}

}  // namespace

bool ReadEntry(absl::string_view bytes, MetadataEntry* kv) {
  WireReader r(bytes);
  return ReadEntryWith(&r, kv);
}

absl::Status ReadEntry(const WireSource& source, absl::string_view bytes, MetadataEntry* kv) {
  WireReader r(bytes);
  return ReadEntryWith(&r, kv) ? absl::OkStatus() : source.Malformed(r, "StringStringEntryProto");
}

absl::Status ReadOpset(const WireSource& source, absl::string_view bytes, std::int64_t* opset) {
  absl::string_view domain;
  std::int64_t version = 0;
  WireReader r(bytes);
  WireField f;
  while (r.Next(&f)) {
    if (f.number == kOpsetDomain && IsLen(f)) domain = f.bytes;
    if (f.number == kOpsetVersion && IsVarint(f)) version = static_cast<std::int64_t>(f.varint);
  }
  if (!r.ok()) return source.Malformed(r, "OperatorSetIdProto");
  if (version < 0) return OpsetOutOfRange(source.origin, version);
  if (domain.empty() || domain == "ai.onnx") *opset = version;
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace semmap
