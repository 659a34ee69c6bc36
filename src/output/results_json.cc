#include "semmap/results_json.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"
#include "io/json_writer.h"
#include "nlohmann/json.hpp"
#include "semmap/tree.h"

namespace semmap {
namespace {

using internal::AppendIndentedJson;
using internal::JsonObjectText;

nlohmann::json FitValue(const ManifestFit& fit) {
  nlohmann::json notes = nlohmann::json::array();
  for (const FitNote& note : fit.notes) {
    notes.push_back({{"reason", std::string(FitNoteKindName(note.kind))},
                     {"count", note.count},
                     {"nodes", note.nodes},
                     {"example", note.example},
                     {"text", note.text}});
  }
  return {{"checked", fit.checked},
          {"fits", fit.fits},
          {"verdict", std::string(fit.verdict())},
          {"notes", std::move(notes)},
          {"scoped_nodes", fit.scoped_nodes},
          {"resolved_nodes", fit.resolved_nodes},
          {"distinct_scopes", fit.distinct_scopes},
          {"resolved_scopes", fit.resolved_scopes},
          {"class_conflicts", fit.class_conflicts},
          {"named_tensors", fit.named_tensors},
          {"matched_tensors", fit.matched_tensors},
          {"shape_mismatches", fit.shape_mismatches},
          {"unused_items", fit.unused_items},
          {"unnamed_weights", fit.unnamed_weights},
          {"weight_size_mismatches", fit.weight_size_mismatches},
          {"evidence", fit.evidence}};
}

nlohmann::json ReferenceValue(const ReferenceCheck& c) {
  return {{"ancestor", c.ancestor()},
          {"same_graph", c.same_graph},
          {"other_exporter", c.other_exporter},
          {"less_informed", c.less_informed},
          {"few_paired", c.few_paired},
          {"model_naming", std::string(NodeNamingName(c.model_naming))},
          {"reference_naming", std::string(NodeNamingName(c.reference_naming))},
          {"model_scopes", c.model_scopes},
          {"reference_scopes", c.reference_scopes},
          {"shared_names", c.shared_names},
          {"paired_nodes", c.paired_nodes},
          {"own_answers_kept", c.own_answers_kept},
          {"warnings", c.warnings}};
}

void AppendMapping(const SemanticMapper& mapper, NodeId id, int indent, std::string* out) {
  const Node& n = mapper.graph().node(id);
  const Mapping m = mapper.moduleFor(id);
  JsonObjectText j(indent, out);  // keys in sorted order
  j.String("category", m.category);
  j.String("class", m.class_name);
  j.Number("confidence", m.confidence);
  j.String("domain", n.domain);
  j.String("evidence", m.evidence);
  if (m.mapped()) {
    j.String("module", m.module_path);
  } else {
    j.Null("module");
  }
  j.String("name", n.name);
  j.String("node", n.id);
  j.String("op_type", n.op_type);
  const std::vector<absl::string_view> origins = mapper.originPathsOf(id);
  if (!origins.empty()) j.Strings("origins", origins);
  j.String("qualified_class", m.qualified_class);
  j.String("strategy", StrategyName(m.strategy));
  j.Close();
}

// The per-module list of the summary, written into `text` (flushed to
// `out` as it grows) as a list nested one level deep.
void AppendModuleCounts(std::ostream& out, const Manifest& manifest,
                        const ModuleNodeCounts& per_module, std::string* text) {
  bool any = false;
  for (std::size_t i = 0; i < manifest.size(); ++i) {
    if (per_module.subtree[i] == 0) continue;
    const ModuleInfo& info = manifest.module(static_cast<ModuleId>(i));
    *text += any ? ",\n    " : "[\n    ";
    any = true;
    JsonObjectText item(4, text);  // keys in sorted order
    item.String("class", info.class_name);
    item.Unsigned("nodes", per_module.own[i]);
    item.String("path", info.path);
    item.Unsigned("subtree_nodes", per_module.subtree[i]);
    item.Close();
    internal::FlushLarge(out, text);
  }
  *text += any ? "\n  ]" : "[]";
}

}  // namespace

std::string MappingJson(const SemanticMapper& mapper, NodeId node, int indent) {
  std::string text;
  AppendMapping(mapper, node, indent, &text);
  return text;
}

std::string ManifestFitJson(const ManifestFit& fit) {
  return internal::DumpJson(FitValue(fit));
}

nlohmann::json ProvenanceValue(const Provenance& p) {
  nlohmann::json v = {{"manifest", std::string(InputSourceName(p.manifest))},
                      {"reference", std::string(InputSourceName(p.reference))},
                      {"record", std::string(RecordUseName(p.record))}};
  if (p.record != RecordUse::kAbsent && p.record != RecordUse::kIgnored) {
    v["record_bytes"] = p.record_bytes;
    v["record_generator"] = p.record_generator;
    v["record_fingerprint"] = p.record_fingerprint;
  }
  if (!p.note.empty()) v["note"] = p.note;
  return v;
}

std::string ProvenanceJson(const Provenance& provenance) {
  return internal::DumpJson(ProvenanceValue(provenance));
}

std::string ReferenceCheckJson(const ReferenceCheck& check) {
  return internal::DumpJson(ReferenceValue(check));
}

// What nlohmann::json's dump(2) of the summary would give (keys in sorted
// order), with the per-module list written as it goes.
void WriteSummaryJson(std::ostream& out, const SemanticMapper& mapper,
                      const JsonSources& sources) {
  const Manifest& manifest = mapper.manifest();
  const RootBinding& b = mapper.rootBinding();
  const MappingList all = mapper.mapAll();
  const auto confident = static_cast<std::size_t>(
      std::count_if(all.begin(), all.end(), [](const Mapping& m) { return m.confident(); }));
  std::string text = "{\n";
  bool first = true;  // members in key order; each after the first on a new line
  auto member = [&](absl::string_view key) {
    if (!first) text += ",\n";
    first = false;
    absl::StrAppend(&text, "  \"", key, "\": ");
  };
  auto small = [&](absl::string_view key, const nlohmann::json& value) {
    member(key);
    AppendIndentedJson(value, 2, &text);
  };
  small("confident", confident);
  small("confident_floor", kConfidentFloor);
  small("manifest", sources.manifest.empty() ? nlohmann::json() : nlohmann::json(sources.manifest));
  if (mapper.hasManifest()) small("manifest_fit", FitValue(mapper.manifestFit()));
  small("mapped", mapper.mappedCount());
  small("model", sources.model);
  member("modules");
  AppendModuleCounts(out, manifest, CountModuleNodes(mapper), &text);
  small("nodes", mapper.graph().size());
  small("provenance", ProvenanceValue(mapper.provenance()));
  if (!sources.reference.empty()) small("reference", sources.reference);
  if (mapper.referenceCheck().checked) {
    small("reference_check", ReferenceValue(mapper.referenceCheck()));
  }
  small("root_binding", {{"root", manifest.module(b.root).path},
                         {"wrapper", b.wrapper},
                         {"scoped_nodes", b.scoped_nodes},
                         {"resolved_nodes", b.resolved_nodes}});
  nlohmann::json strategies = nlohmann::json::object();
  const auto counts = mapper.strategyCounts();
  for (std::size_t s = 0; s < kStrategyCount; ++s) {
    strategies[std::string(StrategyName(static_cast<Strategy>(s)))] = counts[s];
  }
  small("strategies", strategies);
  text += "\n}\n";
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

void WriteNodeListJson(std::ostream& out, const SemanticMapper& mapper,
                       const std::string& model_path, const std::string& query_json,
                       absl::Span<const NodeId> nodes) {
  nlohmann::json query = nlohmann::json::parse(query_json, nullptr, /*allow_exceptions=*/false);
  if (query.is_discarded()) query = query_json;
  internal::WriteJsonWithList(
      out, {{"model", model_path}, {"query", std::move(query)}, {"count", nodes.size()}},
      "nodes", nodes.size(),
      [&](std::size_t i, std::string* text) { AppendMapping(mapper, nodes[i], 4, text); });
}

void WriteModuleListJson(std::ostream& out, const SemanticMapper& mapper,
                         const std::string& model_path, absl::Span<const ModuleId> modules) {
  const Manifest& manifest = mapper.manifest();
  internal::WriteJsonWithList(
      out,
      {{"model", model_path}, {"query", {{"kind", "empty_modules"}}}, {"count", modules.size()}},
      "modules", modules.size(), [&](std::size_t i, std::string* text) {
        const ModuleInfo& info = manifest.module(modules[i]);
        JsonObjectText j(4, text);  // keys in sorted order
        j.String("class", info.class_name);
        j.String("path", info.path);
        j.String("qualified_class", info.qualified_class);
        j.Close();
      });
}

}  // namespace semmap
