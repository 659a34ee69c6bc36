#include "mapping/steps/read_record.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "graph/graph_rep.h"
#include "graph/weightless_copy.h"
#include "io/deflate.h"
#include "io/json_reader.h"
#include "semmap/strategy.h"

namespace semmap {
namespace internal {
namespace {

// JSON parts of a record nest at most this deep ("origins": [[n, [m]]]).
constexpr int kMaxAnswersDepth = 8;

const absl::string_view* FindLast(const std::vector<MetadataEntry>& metadata,
                                  absl::string_view key) {
  const absl::string_view* found = nullptr;
  for (const MetadataEntry& e : metadata) {
    if (e.first == key) found = &e.second;
  }
  return found;
}

// A decimal number as the format writes it: one to `max_digits` digits, the
// first not 0, no sign, no space (docs/record.md, "The format").
bool ReadDecimal(absl::string_view text, std::size_t max_digits, std::uint64_t* out) {
  if (text.empty() || text.size() > max_digits || text[0] == '0') return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(text, out);
}

// "<version>:" after the prefix; the rest of the value in `payload`.
absl::StatusOr<int> ReadVersion(absl::string_view value, absl::string_view where,
                                absl::string_view* payload) {
  if (value.substr(0, kRecordValuePrefix.size()) != kRecordValuePrefix) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": not a semmap record (the value does not start \"",
                     kRecordValuePrefix, "\")"));
  }
  value.remove_prefix(kRecordValuePrefix.size());
  const std::size_t colon = value.find(':');
  std::uint64_t version = 0;
  if (colon == absl::string_view::npos || !ReadDecimal(value.substr(0, colon), 9, &version)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the format version after \"", kRecordValuePrefix,
                     "\" is not a decimal number without sign or leading zero followed by ':'"));
  }
  if (version > static_cast<std::uint64_t>(kRecordFormatVersion)) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": format version ", version, " is newer than this semmap reads (",
        kRecordFormatVersion, "); upgrade semmap, or map without the record (--no-record)"));
  }
  *payload = value.substr(colon + 1);
  return static_cast<int>(version);
}

// RFC 4648 base64 as the format writes it: the standard alphabet, padded to
// a multiple of four characters, on one line, and the bits the last
// character leaves over zero (the one spelling of the bytes).
bool IsCanonicalBase64(absl::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return false;
  std::size_t pad = 0;
  while (pad < 2 && text[text.size() - 1 - pad] == '=') ++pad;
  const auto index = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  for (std::size_t i = 0; i < text.size() - pad; ++i) {
    if (index(text[i]) < 0) return false;
  }
  if (pad == 0) return true;
  const int last = index(text[text.size() - 1 - pad]);
  return (last & (pad == 1 ? 0x3 : 0xf)) == 0;
}

// A record's JSON entry, which must be an object.
absl::StatusOr<JsonDocument> ParseObject(absl::string_view text, absl::string_view where) {
  SEMMAP_ASSIGN_OR_RETURN(JsonDocument doc,
                          JsonDocument::Parse(text, where, {text.size() + 1, kMaxAnswersDepth}));
  if (!doc.root().is_object()) return doc.root().Error("expected an object");
  return doc;
}

// {"fingerprint", "nodes", "generator", "naming", "scopes"}.
absl::Status ReadSource(absl::string_view text, absl::string_view where, std::size_t nodes,
                        DecodedRecord* out) {
  SEMMAP_ASSIGN_OR_RETURN(JsonDocument doc, ParseObject(text, where));
  const JsonValue root = doc.root();
  SEMMAP_ASSIGN_OR_RETURN(absl::string_view fingerprint, root.StringField("fingerprint", false));
  if (fingerprint.size() != 16 || !absl::SimpleHexAtoi(fingerprint, &out->fingerprint)) {
    return root.ErrorAt("fingerprint", "expected 16 hexadecimal digits");
  }
  SEMMAP_ASSIGN_OR_RETURN(JsonValue count, root.Field("nodes"));
  if (!count.is_integer() || count.is_unsigned() || count.int64() < 0) {
    return count.Error("expected a non-negative integer");
  }
  if (static_cast<std::uint64_t>(count.int64()) != nodes) {
    return count.Error(absl::StrCat("states ", count.int64(), " nodes, but the record's graph has ",
                                    nodes, " (an edited or damaged record)"));
  }
  SEMMAP_ASSIGN_OR_RETURN(absl::string_view generator, root.StringField("generator", true));
  out->generator = std::string(generator);
  SEMMAP_ASSIGN_OR_RETURN(absl::string_view naming, root.StringField("naming", false));
  if (naming == NodeNamingName(NodeNaming::kScopes)) {
    out->naming.scheme = NodeNaming::kScopes;
  } else if (naming == NodeNamingName(NodeNaming::kMetadata)) {
    out->naming.scheme = NodeNaming::kMetadata;
  } else if (naming != NodeNamingName(NodeNaming::kNone)) {
    return root.ErrorAt("naming", "expected \"scopes\", \"metadata\" or \"none\"");
  }
  SEMMAP_ASSIGN_OR_RETURN(JsonValue scopes, root.Field("scopes"));
  // A node names up to two scopes: its scoped name and its module stack
  // (NamingOf counts the distinct ones of each: `semmap annotate
  // --scoped-names` gives a dynamo export both).
  if (!scopes.is_integer() || scopes.is_unsigned() || scopes.int64() < 0 ||
      static_cast<std::uint64_t>(scopes.int64()) > 2 * nodes) {
    return scopes.Error("expected an integer from 0 to twice the number of nodes");
  }
  out->naming.scopes = static_cast<std::size_t>(scopes.int64());
  return absl::OkStatus();
}

absl::StatusOr<std::int64_t> Index(const JsonValue& v, std::int64_t low, std::int64_t high) {
  if (!v.is_integer() || v.is_unsigned() || v.int64() < low || v.int64() >= high) {
    return v.Error(absl::StrCat("expected an integer from ", low, " to ", high - 1));
  }
  return v.int64();
}

// An array of exactly `n` elements at `key`.
absl::StatusOr<JsonValue> ArrayOf(const JsonValue& root, absl::string_view key, std::size_t n) {
  SEMMAP_ASSIGN_OR_RETURN(JsonValue array, root.Field(key));
  if (!array.is_array()) return array.Error(absl::StrCat("expected an array, found ", array.type_name()));
  if (array.size() != n) {
    return array.Error(absl::StrCat("has ", array.size(), " entries, the record's graph ", n,
                                    " nodes"));
  }
  return array;
}

absl::Status ReadAnswers(absl::string_view text, absl::string_view where, std::size_t nodes,
                         DecodedRecord* out) {
  SEMMAP_ASSIGN_OR_RETURN(JsonDocument doc, ParseObject(text, where));
  const JsonValue root = doc.root();
  const auto modules = static_cast<std::int64_t>(out->manifest->size());
  SEMMAP_ASSIGN_OR_RETURN(JsonValue names, root.Field("strategies"));
  if (!names.is_array()) return names.Error("expected an array of strategy names");
  std::vector<Strategy> strategies;
  SEMMAP_RETURN_IF_ERROR(names.ForEachElement([&](const JsonValue& name) -> absl::Status {
    SEMMAP_ASSIGN_OR_RETURN(absl::string_view s, name.AsString(false));
    Strategy parsed;
    if (!ParseStrategy(s, &parsed)) return name.Error("not a strategy this semmap knows");
    strategies.push_back(parsed);
    return absl::OkStatus();
  }));
  out->answers.assign(nodes, MappingRecord{});
  std::size_t i = 0;
  SEMMAP_ASSIGN_OR_RETURN(JsonValue module, ArrayOf(root, "module", nodes));
  SEMMAP_RETURN_IF_ERROR(module.ForEachElement([&](const JsonValue& v) -> absl::Status {
    SEMMAP_ASSIGN_OR_RETURN(std::int64_t m, Index(v, -1, modules));
    out->answers[i++].module = static_cast<ModuleId>(m);
    return absl::OkStatus();
  }));
  i = 0;
  SEMMAP_ASSIGN_OR_RETURN(JsonValue confidence, ArrayOf(root, "confidence", nodes));
  SEMMAP_RETURN_IF_ERROR(confidence.ForEachElement([&](const JsonValue& v) -> absl::Status {
    if (!v.is_number() || !(v.number() >= 0.0 && v.number() <= 1.0)) {
      return v.Error("expected a number from 0 to 1");
    }
    out->answers[i++].confidence = v.number();
    return absl::OkStatus();
  }));
  i = 0;
  SEMMAP_ASSIGN_OR_RETURN(JsonValue strategy, ArrayOf(root, "strategy", nodes));
  SEMMAP_RETURN_IF_ERROR(strategy.ForEachElement([&](const JsonValue& v) -> absl::Status {
    SEMMAP_ASSIGN_OR_RETURN(std::int64_t s,
                            Index(v, 0, static_cast<std::int64_t>(strategies.size())));
    MappingRecord& r = out->answers[i++];
    r.strategy = strategies[static_cast<std::size_t>(s)];
    if (r.mapped() != (r.strategy != Strategy::kUnmapped)) {
      return v.Error("a node's strategy and module disagree (one says unmapped)");
    }
    r.evidence = "the record's answer";  // a literal: the record keeps no evidence text
    return absl::OkStatus();
  }));
  SEMMAP_ASSIGN_OR_RETURN(JsonValue origins, root.Field("origins"));
  if (!origins.is_array()) return origins.Error("expected an array");
  return origins.ForEachElement([&](const JsonValue& entry) -> absl::Status {
    if (!entry.is_array() || entry.size() != 2) return entry.Error("expected [node, [modules]]");
    std::int64_t node = -1;
    std::vector<ModuleId> list;
    std::size_t part = 0;
    SEMMAP_RETURN_IF_ERROR(entry.ForEachElement([&](const JsonValue& v) -> absl::Status {
      if (part++ == 0) {
        SEMMAP_ASSIGN_OR_RETURN(node, Index(v, 0, static_cast<std::int64_t>(nodes)));
        return absl::OkStatus();
      }
      if (!v.is_array() || v.size() < 2) return v.Error("expected two or more module indexes");
      return v.ForEachElement([&](const JsonValue& m) -> absl::Status {
        SEMMAP_ASSIGN_OR_RETURN(std::int64_t id, Index(m, 0, modules));
        list.push_back(static_cast<ModuleId>(id));
        return absl::OkStatus();
      });
    }));
    out->origins.Set(static_cast<NodeId>(node), std::move(list));
    return absl::OkStatus();
  });
}


// The manifest entry, and the answers for `nodes` nodes.
absl::Status ReadManifestAndAnswers(absl::string_view manifest, absl::string_view answers,
                                    absl::string_view where, std::size_t nodes,
                                    DecodedRecord* record) {
  record->manifest_text = manifest;
  SEMMAP_ASSIGN_OR_RETURN(Manifest parsed,
                          Manifest::Parse(manifest,
                                          absl::StrCat(where, ": ", kRecordManifestKey)));
  record->manifest = std::make_shared<const Manifest>(std::move(parsed));
  return ReadAnswers(answers, absl::StrCat(where, ": ", kRecordAnswersKey), nodes, record);
}

}  // namespace

bool SameModules(const Manifest& a, const Manifest& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const ModuleInfo& x = a.modules()[i];
    const ModuleInfo& y = b.modules()[i];
    if (x.path != y.path || x.qualified_class != y.qualified_class) return false;
  }
  return true;
}

std::string WithRecordDocLine(absl::string_view doc, absl::string_view value) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(doc, '\n')) {
    if (absl::StartsWith(line, kRecordDocLinePrefix)) continue;
    if (!out.empty()) out += '\n';
    out.append(line.data(), line.size());
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (!value.empty()) absl::StrAppend(&out, out.empty() ? "" : "\n", kRecordDocLinePrefix, value);
  return out;
}

absl::string_view RecordDocLine(absl::string_view doc) {
  absl::string_view found;
  for (absl::string_view line : absl::StrSplit(doc, '\n')) {
    if (absl::ConsumePrefix(&line, kRecordDocLinePrefix)) found = line;
  }
  return found;
}

bool CarriesRecord(const Graph& graph) {
  return FindLast(graph.modelMetadata(), kRecordKey) != nullptr ||
         !RecordDocLine(graph.graphDocString()).empty();
}

std::string FingerprintText(std::uint64_t fingerprint) {
  return absl::StrFormat("%016x", fingerprint);
}

// About 85 lines: the layers of the value peeled in order (prefix and
// version, length, base64, zlib, the weightless copy, its three entries),
// each failure named by the part it is about.
absl::StatusOr<std::optional<DecodedRecord>> ReadRecord(const Graph& graph,
                                                        absl::string_view origin,
                                                        const GraphOptions& graph_options,
                                                        const RecordLimits& limits) {
  const absl::string_view* value = FindLast(graph.modelMetadata(), kRecordKey);
  std::string where = absl::StrCat(origin, ": metadata_props \"", kRecordKey, "\"");
  const absl::string_view doc_value = RecordDocLine(graph.graphDocString());
  if (value == nullptr && !doc_value.empty()) {
    // The model's metadata is gone (a tool rebuilt the model); the graph's
    // doc_string kept the copy.
    value = &doc_value;
    where = absl::StrCat(origin, ": the graph's doc_string line \"", kRecordDocLinePrefix, "\"");
  }
  if (value == nullptr) return std::optional<DecodedRecord>();
  if (value->size() > limits.max_encoded_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", value->size(),
                                                   " bytes, above the limit of ",
                                                   limits.max_encoded_bytes));
  }
  absl::string_view payload;
  SEMMAP_RETURN_IF_ERROR(ReadVersion(*value, where, &payload).status());
  const std::size_t colon = payload.find(':');
  std::uint64_t stated = 0;
  if (colon == absl::string_view::npos || !ReadDecimal(payload.substr(0, colon), 20, &stated)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": the version is not followed by the stream's length in bytes (a decimal number "
               "without sign or leading zero) and ':'"));
  }
  const absl::string_view text = payload.substr(colon + 1);
  // A value cut short: base64 characters, fewer than the stated length needs.
  if (text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") ==
          absl::string_view::npos &&
      text.size() / 4 * 3 + (text.size() % 4) * 3 / 4 < stated) {
    return absl::DataLossError(absl::StrCat(where, ": truncated: it states ", stated,
                                            " bytes of zlib stream, ", text.size(),
                                            " base64 characters hold fewer"));
  }
  std::string compressed;
  if (!IsCanonicalBase64(text) || !absl::Base64Unescape(text, &compressed) ||
      compressed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": the text after the length is not base64 (RFC 4648: padded, on one line)"));
  }
  if (compressed.size() != stated) {
    return absl::DataLossError(absl::StrCat(where, ": truncated or padded: it states ", stated,
                                            " bytes of zlib stream, ", compressed.size(),
                                            " are there"));
  }
  const std::uint64_t bound =
      std::min<std::uint64_t>(limits.max_inflated_bytes, compressed.size() * kMaxInflationRatio);
  // All of it, whatever graph carries it: a record is judged by the same
  // reading on the export it was made from as on every copy of it.
  SEMMAP_ASSIGN_OR_RETURN(std::string bytes, Inflate(compressed, bound, where));
  compressed = std::string();
  DecodedRecord record;
  record.encoded_bytes = value->size();
  SEMMAP_ASSIGN_OR_RETURN(Graph copy,
                          internal::GraphAccess::ParseOwned(
                              std::move(bytes), absl::StrCat(where, ": its graph"), graph_options));
  const std::vector<MetadataEntry>& entries = copy.modelMetadata();
  const absl::string_view* parts[3] = {nullptr, nullptr, nullptr};
  const absl::string_view keys[3] = {kRecordSourceKey, kRecordManifestKey, kRecordAnswersKey};
  for (const MetadataEntry& e : entries) {
    for (int k = 0; k < 3; ++k) {
      if (e.first != keys[k]) continue;
      if (parts[k] != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": its graph has more than one \"", keys[k], "\" entry (a record writes one)"));
      }
      parts[k] = &e.second;
    }
  }
  for (int k = 0; k < 3; ++k) {
    if (parts[k] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": its graph has no \"", keys[k], "\" entry"));
    }
  }
  SEMMAP_RETURN_IF_ERROR(
      ReadSource(*parts[0], absl::StrCat(where, ": ", kRecordSourceKey), copy.size(), &record));
  const std::uint64_t actual = GraphFingerprint(copy);
  if (actual != record.fingerprint) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": its graph's fingerprint is ", FingerprintText(actual), ", the record states ",
        FingerprintText(record.fingerprint), " (an edited or damaged record)"));
  }
  SEMMAP_RETURN_IF_ERROR(
      ReadManifestAndAnswers(*parts[1], *parts[2], where, copy.size(), &record));
  record.source.emplace(std::move(copy));
  return std::optional<DecodedRecord>(std::move(record));
}

}  // namespace internal

absl::string_view InputSourceName(InputSource source) {
  switch (source) {
    case InputSource::kFile: return "file";
    case InputSource::kRecord: return "record";
    case InputSource::kNone: break;
  }
  return "none";
}

absl::string_view RecordUseName(RecordUse use) {
  switch (use) {
    case RecordUse::kUsed: return "used";
    case RecordUse::kSource: return "source";
    case RecordUse::kIgnored: return "ignored";
    case RecordUse::kRejected: return "rejected";
    case RecordUse::kAbsent: break;
  }
  return "absent";
}

}  // namespace semmap
