#include "semmap/results_json.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "io/json_reader.h"
#include "io/json_writer.h"
#include "mapping/core/mapper_access.h"
#include "mapping/core/mapping_record.h"
#include "output/mapping_json.h"
#include "semmap/tree.h"

namespace semmap {
namespace {

using internal::JsonWriter;

// Each object below lists its members in sorted key order, as the writer
// needs them.

void WriteFit(JsonWriter& w, const ManifestFit& fit) {
  w.BeginObject();
  w.Key("checked").Bool(fit.checked);
  w.Key("class_conflicts").Integer(fit.class_conflicts);
  w.Key("distinct_scopes").Integer(fit.distinct_scopes);
  w.Key("evidence").String(fit.evidence);
  w.Key("fits").Bool(fit.fits);
  w.Key("matched_tensors").Integer(fit.matched_tensors);
  w.Key("named_tensors").Integer(fit.named_tensors);
  w.Key("notes").BeginArray();
  for (const FitNote& note : fit.notes) {
    w.BeginObject();
    w.Key("count").Integer(note.count);
    w.Key("example").String(note.example);
    w.Key("nodes").Integer(note.nodes);
    w.Key("reason").String(FitNoteKindName(note.kind));
    w.Key("text").String(note.text);
    w.EndObject();
  }
  w.EndArray();
  w.Key("resolved_nodes").Integer(fit.resolved_nodes);
  w.Key("resolved_scopes").Integer(fit.resolved_scopes);
  w.Key("scoped_nodes").Integer(fit.scoped_nodes);
  w.Key("shape_mismatches").Integer(fit.shape_mismatches);
  w.Key("unnamed_weights").Integer(fit.unnamed_weights);
  w.Key("unused_items").Integer(fit.unused_items);
  w.Key("verdict").String(fit.verdict());
  w.Key("weight_size_mismatches").Integer(fit.weight_size_mismatches);
  w.EndObject();
}

void WriteReference(JsonWriter& w, const ReferenceCheck& c) {
  w.BeginObject();
  w.Key("ancestor").Bool(c.ancestor());
  w.Key("few_paired").Bool(c.few_paired);
  w.Key("less_informed").Bool(c.less_informed);
  w.Key("model_naming").String(NodeNamingName(c.model_naming));
  w.Key("model_scopes").Integer(c.model_scopes);
  w.Key("other_exporter").Bool(c.other_exporter);
  w.Key("own_answers_kept").Integer(c.own_answers_kept);
  w.Key("paired_nodes").Integer(c.paired_nodes);
  w.Key("reference_naming").String(NodeNamingName(c.reference_naming));
  w.Key("reference_scopes").Integer(c.reference_scopes);
  w.Key("same_graph").Bool(c.same_graph);
  w.Key("shared_names").Integer(c.shared_names);
  w.Key("warnings").Strings(c.warnings);
  w.EndObject();
}

void WriteProvenance(JsonWriter& w, const Provenance& p) {
  const bool read = p.record != RecordUse::kAbsent && p.record != RecordUse::kIgnored;
  w.BeginObject();
  w.Key("manifest").String(InputSourceName(p.manifest));
  if (!p.note.empty()) w.Key("note").String(p.note);
  w.Key("record").String(RecordUseName(p.record));
  if (read) {
    w.Key("record_bytes").Integer(p.record_bytes);
    w.Key("record_fingerprint").String(p.record_fingerprint);
    w.Key("record_generator").String(p.record_generator);
  }
  w.Key("reference").String(InputSourceName(p.reference));
  w.EndObject();
}

void WriteMapping(JsonWriter& w, const SemanticMapper& mapper, NodeId id) {
  internal::WriteMappingObject(w, mapper, id, internal::MappingJsonForm::kResult);
}

// The per-module list of the summary, flushed to `out` as it grows.
void WriteModuleCounts(std::ostream& out, JsonWriter& w, const Manifest& manifest,
                       const ModuleNodeCounts& per_module) {
  w.BeginArray();
  for (std::size_t i = 0; i < manifest.size(); ++i) {
    if (per_module.subtree[i] == 0) continue;
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(i));
    w.BeginObject();
    w.Key("class").String(info.class_name);
    w.Key("nodes").Integer(per_module.own[i]);
    w.Key("path").String(info.path);
    w.Key("subtree_nodes").Integer(per_module.subtree[i]);
    w.EndObject();
    internal::FlushLarge(out, w.text());
  }
  w.EndArray();
}

void WriteQuery(JsonWriter& w, const NodeQuery& q) {
  w.BeginObject();
  switch (q.kind) {
    case NodeQuery::Kind::kModule:
      w.Key("kind").String("module");
      w.Key("module").String(q.text);
      w.Key("subtree").Bool(q.subtree);
      break;
    case NodeQuery::Kind::kLayer:
      if (q.has_container) w.Key("container").String(q.container);
      w.Key("kind").String("layer");
      w.Key("layer").Signed(q.layer);
      break;
    case NodeQuery::Kind::kClass:
      w.Key("class").String(q.text);
      w.Key("kind").String("class");
      break;
    case NodeQuery::Kind::kCategory:
      w.Key("category").String(q.text);
      w.Key("kind").String("category");
      break;
    case NodeQuery::Kind::kPattern:
      w.Key("kind").String("pattern");
      w.Key("pattern").String(q.text);
      break;
    case NodeQuery::Kind::kBelow:
      w.Key("confidence").Number(q.confidence);
      w.Key("kind").String("below");
      break;
  }
  w.EndObject();
}

void Write(std::ostream& out, const std::string& text) {
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

std::string MappingJson(const SemanticMapper& mapper, NodeId node, int indent) {
  std::string text;
  JsonWriter w(&text, indent / 2);
  WriteMapping(w, mapper, node);
  return text;
}

std::string ManifestFitJson(const ManifestFit& fit) {
  std::string text;
  JsonWriter w(&text);
  WriteFit(w, fit);
  return text;
}

std::string ProvenanceJson(const Provenance& provenance) {
  std::string text;
  JsonWriter w(&text);
  WriteProvenance(w, provenance);
  return text;
}

std::string ReferenceCheckJson(const ReferenceCheck& check) {
  std::string text;
  JsonWriter w(&text);
  WriteReference(w, check);
  return text;
}

void WriteSummaryJson(std::ostream& out, const SemanticMapper& mapper,
                      const JsonSources& sources) {
  const Manifest& manifest = mapper.manifest();
  const RootBinding& b = mapper.rootBinding();
  // Counted from the mapper's records: a Mapping assembled per node would
  // read each node's module from the manifest.
  std::size_t confident = 0;
  for (const internal::MappingRecord& r : internal::MapperAccess::Records(mapper)) {
    confident += r.mapped() && r.confidence >= kConfidentFloor;  // Mapping::confident()
  }
  const std::size_t mapped = mapper.mappedCount();
  const auto counts = mapper.strategyCounts();
  const ModuleNodeCounts per_module = CountModuleNodes(mapper);
  std::string text;
  JsonWriter w(&text);
  w.BeginObject();
  w.Key("confident").Integer(confident);
  w.Key("confident_floor").Number(kConfidentFloor);
  w.Key("manifest").StringOrNull(sources.manifest);
  if (mapper.hasManifest()) WriteFit(w.Key("manifest_fit"), mapper.manifestFit());
  w.Key("mapped").Integer(mapped);
  w.Key("model").String(sources.model);
  WriteModuleCounts(out, w.Key("modules"), manifest, per_module);
  w.Key("nodes").Integer(mapper.graph().size());
  WriteProvenance(w.Key("provenance"), mapper.provenance());
  if (!sources.reference.empty()) w.Key("reference").String(sources.reference);
  if (mapper.referenceCheck().checked) {
    WriteReference(w.Key("reference_check"), mapper.referenceCheck());
  }
  w.Key("root_binding").BeginObject();
  w.Key("resolved_nodes").Integer(b.resolved_nodes);
  w.Key("root").String(manifest.path(b.root));
  w.Key("scoped_nodes").Integer(b.scoped_nodes);
  w.Key("wrapper").Strings(b.wrapper);
  w.EndObject();
  // Strategies by name, as an object keeps its keys.
  std::vector<std::pair<absl::string_view, std::size_t>> strategies;
  for (std::size_t s = 0; s < kStrategyCount; ++s) {
    strategies.emplace_back(StrategyName(static_cast<Strategy>(s)), counts[s]);
  }
  std::sort(strategies.begin(), strategies.end());
  w.Key("strategies").BeginObject();
  for (const auto& [name, count] : strategies) w.Key(name).Integer(count);
  w.EndObject();
  w.EndObject();
  text += "\n";
  Write(out, text);
}

namespace {

// Both forms of WriteNodeListJson; `write_query` writes the "query" value.
template <typename WriteQueryValue>
void WriteNodeList(std::ostream& out, const SemanticMapper& mapper, const std::string& model_path,
                   absl::Span<const NodeId> nodes, WriteQueryValue&& write_query) {
  std::string text;
  JsonWriter w(&text);
  w.BeginObject();
  w.Key("count").Integer(nodes.size());
  w.Key("model").String(model_path);
  w.Key("nodes").BeginArray();
  for (NodeId id : nodes) {
    WriteMapping(w, mapper, id);
    internal::FlushLarge(out, &text);
  }
  w.EndArray();
  write_query(w.Key("query"));
  w.EndObject();
  text += "\n";
  Write(out, text);
}

}  // namespace

void WriteNodeListJson(std::ostream& out, const SemanticMapper& mapper,
                       const std::string& model_path, const NodeQuery& query,
                       absl::Span<const NodeId> nodes) {
  WriteNodeList(out, mapper, model_path, nodes, [&](JsonWriter& w) { WriteQuery(w, query); });
}

namespace {

// A parsed JSON value written again, object keys in sorted order and the
// last of repeated keys kept (as a map-backed DOM dumps it).
void WriteParsed(JsonWriter& w, const internal::JsonValue& v) {
  using Type = internal::JsonValue::Type;
  switch (v.type()) {
    case Type::kNull: w.Null(); return;
    case Type::kBoolean: w.Bool(v.boolean()); return;
    case Type::kString: w.String(v.string()); return;
    case Type::kNumber:
      if (v.is_unsigned()) {
        w.Unsigned(v.uint64());
      } else if (v.is_integer()) {
        w.Signed(v.int64());
      } else {
        w.Number(v.number());
      }
      return;
    case Type::kArray:
      w.BeginArray();
      (void)v.ForEachElement([&](const internal::JsonValue& e) {
        WriteParsed(w, e);
        return absl::OkStatus();
      });
      w.EndArray();
      return;
    case Type::kObject: {
      std::map<std::string, std::optional<internal::JsonValue>> fields;
      (void)v.ForEachField([&](absl::string_view key, const internal::JsonValue& value) {
        fields[std::string(key)] = value;
        return absl::OkStatus();
      });
      w.BeginObject();
      for (const auto& [key, value] : fields) {
        w.Key(key);
        WriteParsed(w, *value);
      }
      w.EndObject();
      return;
    }
  }
}

}  // namespace

void WriteNodeListJson(std::ostream& out, const SemanticMapper& mapper,
                       const std::string& model_path, const std::string& query_json,
                       absl::Span<const NodeId> nodes) {
  const absl::StatusOr<internal::JsonDocument> doc =
      internal::JsonDocument::Parse(query_json, "query", {std::size_t{1} << 20, 256});
  WriteNodeList(out, mapper, model_path, nodes, [&](JsonWriter& w) {
    if (doc.ok()) {
      WriteParsed(w, doc->root());
    } else {
      w.String(query_json);
    }
  });
}

void WriteModuleListJson(std::ostream& out, const SemanticMapper& mapper,
                         const std::string& model_path, absl::Span<const ModuleId> modules) {
  const Manifest& manifest = mapper.manifest();
  std::string text;
  JsonWriter w(&text);
  w.BeginObject();
  w.Key("count").Integer(modules.size());
  w.Key("model").String(model_path);
  w.Key("modules").BeginArray();
  for (ModuleId id : modules) {
    const ModuleInfo& info = manifest.module(id);
    w.BeginObject();
    w.Key("class").String(info.class_name);
    w.Key("path").String(info.path);
    w.Key("qualified_class").String(info.qualified_class);
    w.EndObject();
    internal::FlushLarge(out, &text);
  }
  w.EndArray();
  w.Key("query").BeginObject();
  w.Key("kind").String("empty_modules");
  w.EndObject();
  w.EndObject();
  text += "\n";
  Write(out, text);
}

void WriteContainerListJson(std::ostream& out, const SemanticMapper& mapper,
                            const std::string& model_path,
                            absl::Span<const RepeatedContainer> containers) {
  const Manifest& manifest = mapper.manifest();
  std::string text;
  JsonWriter w(&text);
  w.BeginObject();
  w.Key("containers").BeginArray();
  for (const RepeatedContainer& c : containers) {
    w.BeginObject();
    w.Key("item_class").String(c.item_class);
    w.Key("item_qualified_class").String(c.item_qualified_class);
    w.Key("items").Integer(c.items.size());
    w.Key("layer").Bool(c.layer);
    w.Key("outermost").Bool(c.outermost);
    w.Key("path").String(manifest.path(c.module));
    w.EndObject();
  }
  w.EndArray();
  w.Key("model").String(model_path);
  w.EndObject();
  text += "\n";
  Write(out, text);
}

namespace {

// A file as named, or null when none was.
void WriteNamed(JsonWriter& w, const std::optional<std::string>& path) {
  if (path) {
    w.String(*path);
  } else {
    w.Null();
  }
}

void WriteGroups(JsonWriter& w, const std::vector<GroupTime>& groups) {
  w.BeginArray();
  for (const GroupTime& g : groups) {
    w.BeginObject();
    w.Key("calls").Integer(g.calls);
    w.Key("name").String(g.name);
    w.Key("nodes").Integer(g.nodes);
    w.Key("us").Integer(g.us);
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

void WriteProfileJson(std::ostream& out, const SemanticMapper& mapper, const Profile& profile,
                      const ProfileAttribution& a, const ProfileSources& sources) {
  const Manifest& manifest = mapper.manifest();
  std::string text;
  JsonWriter w(&text);
  w.BeginObject();
  w.Key("attributed_nodes").Integer(a.attributed_nodes);
  w.Key("attributed_us").Integer(a.attributed_us);
  WriteGroups(w.Key("categories"), a.categories);
  WriteGroups(w.Key("classes"), a.classes);
  w.Key("kernel_events").Integer(profile.kernel_events());
  w.Key("kernel_us").Integer(a.kernel_us);
  w.Key("layers").BeginArray();
  for (const LayerTime& l : a.layers) {
    w.BeginObject();
    w.Key("calls").Integer(l.calls);
    w.Key("container").String(manifest.path(l.container));
    w.Key("index").Integer(l.index);
    w.Key("module").String(manifest.path(l.item));
    w.Key("nodes").Integer(l.nodes);
    w.Key("us").Integer(l.us);
    w.EndObject();
  }
  w.EndArray();
  WriteNamed(w.Key("manifest"), sources.manifest);
  w.Key("model").String(sources.model);
  w.Key("modules").BeginArray();
  for (const ModuleTime& m : a.modules) {
    if (m.subtree_us == 0 && m.subtree_calls == 0) continue;
    const ModuleInfo& info = manifest.module(m.module);
    w.BeginObject();
    w.Key("class").String(info.class_name);
    w.Key("module").String(info.path);
    w.Key("own_calls").Integer(m.own_calls);
    w.Key("own_nodes").Integer(m.own_nodes);
    w.Key("own_us").Integer(m.own_us);
    w.Key("subtree_calls").Integer(m.subtree_calls);
    w.Key("subtree_nodes").Integer(m.subtree_nodes);
    w.Key("subtree_us").Integer(m.subtree_us);
    w.EndObject();
    internal::FlushLarge(out, &text);
  }
  w.EndArray();
  WriteGroups(w.Key("op_types"), a.op_types);
  w.Key("profile").String(sources.profile);
  w.Key("profiled_nodes").Integer(a.profiled_nodes);
  w.Key("providers").Strings(profile.providers());
  WriteNamed(w.Key("reference"), sources.reference);
  w.Key("run_us").Integer(profile.run_us());
  w.Key("runs").Integer(profile.runs());
  w.Key("split_fused").BeginObject();
  w.Key("nodes").Integer(a.split_nodes);
  w.Key("us").Integer(a.split_us);
  w.EndObject();
  w.Key("unattributed").BeginArray();
  for (const UnattributedTime& u : a.unattributed) {
    w.BeginObject();
    w.Key("calls").Integer(u.calls);
    w.Key("examples").Strings(u.examples);
    w.Key("nodes").Integer(u.nodes);
    w.Key("reason").String(UnattributedReasonName(u.reason));
    w.Key("us").Integer(u.us);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  text += "\n";
  Write(out, text);
}

std::string TruthScoreJson(const TruthScore& t, const std::string& model_path) {
  std::string text;
  JsonWriter w(&text, 0, JsonWriter::kCompact);
  w.BeginObject();
  w.Key("accuracy").Number(t.accuracy());
  w.Key("calibration").BeginArray();
  for (const ConfidenceBucket& b : t.buckets) {
    w.BeginObject();
    w.Key("correct").Integer(b.correct);
    w.Key("count").Integer(b.count);
    w.Key("hi").Number(b.hi);
    w.Key("lo").Number(b.lo);
    w.EndObject();
  }
  w.EndArray();
  w.Key("correct").Integer(t.correct);
  w.Key("coverage").Number(t.coverage());
  w.Key("known").Integer(t.known);
  w.Key("model").String(model_path);
  w.Key("nodes").Integer(t.nodes);
  w.Key("origins").BeginObject();
  w.Key("exact").Integer(t.origins_exact);
  w.Key("fused").Integer(t.fused);
  w.Key("listed").Integer(t.origins_listed);
  w.Key("spurious").Integer(t.origins_spurious);
  w.EndObject();
  // Strategies with answers, by name, as an object keeps its keys.
  std::vector<std::pair<absl::string_view, std::size_t>> strategies;
  for (std::size_t s = 0; s < kStrategyCount; ++s) {
    if (t.by_strategy[s] != 0) strategies.emplace_back(StrategyName(static_cast<Strategy>(s)), s);
  }
  std::sort(strategies.begin(), strategies.end());
  w.Key("strategies").BeginObject();
  for (const auto& [name, s] : strategies) {
    w.Key(name).BeginObject();
    w.Key("accuracy").Number(static_cast<double>(t.by_strategy_correct[s]) /
                             static_cast<double>(t.by_strategy[s]));
    w.Key("correct").Integer(t.by_strategy_correct[s]);
    w.Key("count").Integer(t.by_strategy[s]);
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  return text;
}

}  // namespace semmap
