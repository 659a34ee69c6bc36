// Fuzz target for the provenance record's reader (src/mapping/steps/read_record.h).
// The input is either the record's value itself (first byte 0) or, more
// usefully, the inflated model the value encodes (any other first byte):
// the target compresses and encodes it as `semmap embed` does and puts it
// into a small host model (first byte 1), or into the input model itself
// (first byte 2: a record stating its host's own fingerprint, read whole
// as any other). Properties:
//   - a record that cannot be read is an error naming the host and the key;
//   - a record read has its graph, a manifest, answers sized to its graph,
//     every answer's module inside the manifest, and origins of known nodes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "graph/onnx_fields.h"
#include "graph/wire_writer.h"
#include "io/deflate.h"
#include "mapping/steps/read_record.h"
#include "semmap/graph.h"
#include "semmap/provenance.h"

namespace {

constexpr absl::string_view kOrigin = "host.onnx";

// `model` with `value` appended as its record.
std::string WithRecord(std::string model, absl::string_view value) {
  std::string entry;
  semmap::internal::AppendLenField(&entry, semmap::internal::kEntryKey, semmap::kRecordKey);
  semmap::internal::AppendLenField(&entry, semmap::internal::kEntryValue, value);
  semmap::internal::AppendLenField(&model, semmap::internal::model_field::kMetadataProps, entry);
  return model;
}

// A ModelProto with one Relu node, and `value` as its record.
std::string HostWith(absl::string_view value) {
  using semmap::internal::AppendLenField;
  std::string node;
  AppendLenField(&node, semmap::internal::node_field::kInput, "x");
  AppendLenField(&node, semmap::internal::node_field::kOutput, "y");
  AppendLenField(&node, semmap::internal::node_field::kName, "/relu/Relu");
  AppendLenField(&node, semmap::internal::node_field::kOpType, "Relu");
  std::string graph;
  AppendLenField(&graph, semmap::internal::graph_field::kNode, node);
  std::string model;
  semmap::internal::AppendVarint(&model, (semmap::internal::model_field::kIrVersion << 3) | 0);
  semmap::internal::AppendVarint(&model, 8);
  AppendLenField(&model, semmap::internal::model_field::kGraph, graph);
  return WithRecord(std::move(model), value);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const absl::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string value;
  if (data[0] == 0) {
    value = std::string(input);
  } else {
    absl::StatusOr<std::string> z = semmap::internal::Deflate(input);
    SEMMAP_FUZZ_CHECK(z.ok());
    value = absl::StrCat("semmap-record/1:", z->size(), ":", absl::Base64Escape(*z));
  }
  absl::StatusOr<semmap::Graph> host =
      semmap::Graph::Parse(data[0] == 2 ? WithRecord(std::string(input), value) : HostWith(value),
                           kOrigin);
  if (!host.ok()) return 0;  // the input is no model to host a record (fuzz_onnx_load's job)
  semmap::internal::RecordLimits limits;
  limits.max_inflated_bytes = std::uint64_t{64} << 20;
  auto record = semmap::internal::ReadRecord(*host, kOrigin, semmap::GraphOptions(), limits);
  if (!record.ok()) {
    semmap_fuzz::CheckErrorNamesOrigin(record.status(), kOrigin);
    SEMMAP_FUZZ_CHECK(record.status().message().find(semmap::kRecordKey) != absl::string_view::npos);
    return 0;
  }
  SEMMAP_FUZZ_CHECK(record->has_value());
  const semmap::internal::DecodedRecord& r = **record;
  SEMMAP_FUZZ_CHECK(r.manifest != nullptr && r.manifest->size() >= 1);
  SEMMAP_FUZZ_CHECK(r.source.has_value());
  const std::size_t nodes = r.source->size();
  SEMMAP_FUZZ_CHECK(r.answers.size() == nodes);
  for (const semmap::internal::MappingRecord& a : r.answers) {
    SEMMAP_FUZZ_CHECK(a.module == semmap::kNoModule ||
                      (a.module >= 0 && static_cast<std::size_t>(a.module) < r.manifest->size()));
    SEMMAP_FUZZ_CHECK(a.confidence >= 0.0 && a.confidence <= 1.0);
  }
  for (std::size_t i = 0; i < nodes; ++i) {
    for (semmap::ModuleId m : r.origins.Of(static_cast<semmap::NodeId>(i))) {
      SEMMAP_FUZZ_CHECK(m >= 0 && static_cast<std::size_t>(m) < r.manifest->size());
    }
  }
  return 0;
}
