#include "semmap/embed.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/parallel.h"
#include "base/status_macros.h"
#include "graph/model_metadata_edit.h"
#include "graph/onnx_fields.h"
#include "graph/weightless_copy.h"
#include "graph/wire_writer.h"
#include "io/atomic_write.h"
#include "io/deflate.h"
#include "io/file_io.h"
#include "io/json_writer.h"
#include "io/mapped_file.h"
#include "mapping/steps/check_reference.h"
#include "mapping/steps/read_record.h"
#include "semmap/version.h"

namespace semmap {
namespace {

// "semmap.answers" (mapping/steps/read_record.h): per node a module index, a
// confidence and a strategy index, and the origins of fused nodes.
std::string AnswersJson(const SemanticMapper& mapper) {
  std::string module, confidence, strategy, origins;
  NodeId i = 0;
  for (const Mapping& m : mapper.mapAll()) {
    const char* comma = i == 0 ? "" : ",";
    absl::StrAppend(&module, comma, m.mapped() ? m.module : -1);
    confidence += comma;
    internal::AppendJsonNumber(m.confidence, &confidence);
    absl::StrAppend(&strategy, comma, static_cast<int>(m.strategy));
    if (const absl::Span<const ModuleId> o = mapper.originsOf(i); !o.empty()) {
      absl::StrAppend(&origins, origins.empty() ? "" : ",", "[", i, ",[", absl::StrJoin(o, ","),
                      "]]");
    }
    ++i;
  }
  std::string out = "{\"strategies\":[";
  for (std::size_t s = 0; s < kStrategyCount; ++s) {
    absl::StrAppend(&out, s == 0 ? "" : ",", "\"", StrategyName(static_cast<Strategy>(s)), "\"");
  }
  absl::StrAppend(&out, "],\"module\":[", module, "],\"confidence\":[", confidence,
                  "],\"strategy\":[", strategy, "],\"origins\":[", origins, "]}");
  return out;
}

// The manifest text the record stores: the named file's, or the one of the
// record the source mapper read it from. Either must list the mapper's
// modules.
absl::StatusOr<std::string> ManifestText(const SemanticMapper& source,
                                         const std::string& source_path,
                                         const EmbedOptions& options) {
  std::string text;
  std::string origin = options.manifest_path;
  if (!options.manifest_path.empty()) {
    SEMMAP_ASSIGN_OR_RETURN(text, internal::ReadFile(options.manifest_path,
                                                     ManifestOptions().max_file_bytes));
  } else if (source.provenance().manifest == InputSource::kRecord) {
    SEMMAP_ASSIGN_OR_RETURN(std::optional<internal::DecodedRecord> record,
                            internal::ReadRecord(source.graph(), source_path, GraphOptions()));
    if (!record) {
      return absl::FailedPreconditionError(
          absl::StrCat(source_path, ": its record is gone; was the file changed?"));
    }
    text = std::string(record->manifest_text);
    origin = absl::StrCat(source_path, "'s record");
  } else {
    return absl::FailedPreconditionError(absl::StrCat(
        source_path, ": embedding a record needs the model's manifest (none was given)"));
  }
  SEMMAP_ASSIGN_OR_RETURN(Manifest parsed, Manifest::Parse(text, origin));
  if (!internal::SameModules(parsed, source.manifest())) {
    return absl::FailedPreconditionError(absl::StrCat(
        origin, ": lists other modules than the manifest the model was mapped with; was it "
                "changed?"));
  }
  return text;
}

}  // namespace

// About 100 lines: the record built (manifest, weightless copy, answers),
// checked against what it describes and where it goes, then written.
absl::StatusOr<EmbedResult> Embed(const SemanticMapper& source, const std::string& source_path,
                                  const std::string& target_path, const std::string& output,
                                  const EmbedOptions& options) {
  std::vector<std::string> others = options.protected_paths;
  others.push_back(source_path);
  SEMMAP_RETURN_IF_ERROR(internal::CheckOutputFor(
      output, {{target_path, "the input model"}, {options.manifest_path, "the manifest"}}, others,
      options.allow_overwrite));
  if (!source.hasManifest()) {
    return absl::FailedPreconditionError(absl::StrCat(
        source_path, ": embedding a record needs the model's manifest (none was given)"));
  }
  EmbedResult result;
  // The manifest's text and the weightless copy of the source (which must
  // be the graph mapped) share nothing: on a large graph, on two cores.
  absl::StatusOr<std::string> manifest_read = absl::UnknownError("not read");
  absl::StatusOr<std::string> copy_made = absl::UnknownError("not made");
  internal::RunBoth(
      source.graph().size() >= internal::kParallelNodes,
      [&] { manifest_read = ManifestText(source, source_path, options); },
      [&] {
        absl::StatusOr<internal::MappedFile> file =
            internal::MappedFile::Open(source_path, options.max_file_bytes);
        copy_made = file.ok() ? internal::WeightlessCopy(file->bytes(), source_path,
                                                         options.max_subgraph_depth)
                              : file.status();
      });
  SEMMAP_RETURN_IF_ERROR(manifest_read.status());
  SEMMAP_RETURN_IF_ERROR(copy_made.status());
  const std::string manifest_text = *std::move(manifest_read);
  result.manifest_bytes = manifest_text.size();
  std::string copy = *std::move(copy_made);
  const std::uint64_t fingerprint = internal::GraphFingerprint(source.graph());
  {
    GraphOptions graph_options;
    graph_options.max_subgraph_depth = options.max_subgraph_depth;
    SEMMAP_ASSIGN_OR_RETURN(Graph reread, Graph::Parse(copy, source_path, graph_options));
    if (internal::GraphFingerprint(reread) != fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(
          source_path, ": is not the graph that was mapped; was the file changed?"));
    }
  }
  result.nodes = source.graph().size();
  result.fingerprint = internal::FingerprintText(fingerprint);
  result.graph_bytes = copy.size();
  const internal::GraphNaming naming = internal::NamingOf(source.graph());
  const std::string source_json = absl::StrCat(
      "{\"fingerprint\":\"", result.fingerprint, "\",\"nodes\":", result.nodes,
      ",\"generator\":\"semmap ", SEMMAP_VERSION_STRING, "\",\"naming\":\"",
      NodeNamingName(naming.scheme), "\",\"scopes\":", naming.scopes, "}");
  // The entries first: a reader of the file the record was made from needs
  // them and not the copy, and stops inflating once it has them.
  std::string record_model;
  {
    const std::string answers = AnswersJson(source);
    for (const auto& [key, value] : {std::pair<absl::string_view, absl::string_view>{
                                         internal::kRecordSourceKey, source_json},
                                     {internal::kRecordManifestKey, manifest_text},
                                     {internal::kRecordAnswersKey, answers}}) {
      std::string entry;
      internal::AppendLenField(&entry, internal::kEntryKey, key);
      internal::AppendLenField(&entry, internal::kEntryValue, value);
      internal::AppendLenField(&record_model, internal::model_field::kMetadataProps, entry);
    }
  }
  // The entries, then the copy: one stream of the two, never joined.
  const absl::string_view record_pieces[] = {record_model, copy};
  SEMMAP_ASSIGN_OR_RETURN(std::string compressed, internal::Deflate(record_pieces));
  record_model = std::string();
  copy = std::string();
  // "semmap-record/1:<zlib stream bytes>:<base64>": the length tells a
  // value cut short from a whole one without inflating all of it.
  std::string value = absl::StrCat(internal::kRecordValuePrefix, kRecordFormatVersion, ":",
                                   compressed.size(), ":");
  value += absl::Base64Escape(compressed);
  result.record_bytes = value.size();

  // The target, and whether the record describes its source.
  SEMMAP_ASSIGN_OR_RETURN(internal::MappedFile target,
                          internal::MappedFile::Open(target_path, options.max_file_bytes));
  if (target_path != source_path) {
    GraphOptions graph_options;
    graph_options.max_subgraph_depth = options.max_subgraph_depth;
    graph_options.max_file_bytes = options.max_file_bytes;
    SEMMAP_ASSIGN_OR_RETURN(Graph target_graph, Graph::Load(target_path, graph_options));
    absl::StatusOr<ReferenceCheck> check =
        internal::CheckReference(target_graph, source.graph(), source.rules());
    if (!check.ok() || !check->ancestor()) {
      return absl::FailedPreconditionError(absl::StrCat(
          target_path, ": is not a processed copy of ", source_path, ": ",
          check.ok() ? absl::StrJoin(check->warnings, "; ") : check.status().message()));
    }
  }
  // The entry, and its copy on a line of the graph's doc_string, which
  // tools that rebuild the model keep (read_record.h).
  const internal::GraphDocEdit doc_line = [&value](absl::string_view current) {
    return internal::WithRecordDocLine(current, value);
  };
  SEMMAP_ASSIGN_OR_RETURN(
      internal::ModelMetadataEdit edit,
      internal::PlanModelMetadataEdit(target.bytes(), target_path, kRecordKey,
                                      {{std::string(kRecordKey), value}}, doc_line));
  result.replaced = edit.removed;
  SEMMAP_RETURN_IF_ERROR(
      internal::WriteMappedPiecesAtomically(output, edit.pieces, target, target_path));
  result.bytes_written = edit.size;
  return result;
}

std::string EmbedResultJson(const EmbedResult& result, const std::string& model,
                            const std::string& output) {
  std::string text;
  internal::JsonWriter w(&text);
  w.BeginObject();
  w.Key("bytes").Integer(result.bytes_written);
  w.Key("fingerprint").String(result.fingerprint);
  w.Key("graph_bytes").Integer(result.graph_bytes);
  w.Key("manifest_bytes").Integer(result.manifest_bytes);
  w.Key("model").String(model);
  w.Key("nodes").Integer(result.nodes);
  w.Key("output").String(output);
  w.Key("record_bytes").Integer(result.record_bytes);
  w.Key("replaced").Integer(result.replaced);
  w.EndObject();
  return text;
}

}  // namespace semmap
