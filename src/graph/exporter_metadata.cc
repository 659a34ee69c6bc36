#include "graph/exporter_metadata.h"

#include <algorithm>

#include "semmap/metadata_keys.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace semmap {
namespace internal {
namespace {

constexpr absl::string_view kNameScopes = "pkg.torch.onnx.name_scopes";
constexpr absl::string_view kClassHierarchy = "pkg.torch.onnx.class_hierarchy";
constexpr absl::string_view kNamespace = "namespace";
// Written by `semmap annotate`: semmap::kModuleKey, earlier "semmap.module".
constexpr absl::string_view kLegacySemmapModule = "semmap.module";
// Written by torch.export when a node has no module stack.
constexpr absl::string_view kEmptyStackMarker = "_empty_nn_module_stack_from_metadata_hook";

const absl::string_view* Find(absl::Span<const MetadataEntry> metadata, absl::string_view key) {
  for (const auto& kv : metadata) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}

// "<path>: <class>/<path>: <class>/.../<fx name>: <target>"
bool ParseNamespace(absl::string_view text, ModuleStack* out) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  if (parts.size() < 2) return false;
  parts.pop_back();  // the FX node
  for (absl::string_view part : parts) {
    const std::size_t colon = part.find(": ");
    if (colon == absl::string_view::npos) return false;
    out->paths.emplace_back(part.substr(0, colon));
    out->classes.emplace_back(part.substr(colon + 2));
  }
  return true;
}

}  // namespace

bool ParsePythonStringList(absl::string_view text, std::vector<std::string>* out) {
  text = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&text, "[") || !absl::ConsumeSuffix(&text, "]")) return false;
  out->clear();
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_space();
  while (i < text.size()) {
    const char quote = text[i];
    if (quote != '\'' && quote != '"') return false;
    ++i;
    std::string item;
    bool closed = false;
    while (i < text.size()) {
      const char c = text[i++];
      if (c == quote) {
        closed = true;
        break;
      }
      if (c != '\\') {
        item.push_back(c);
        continue;
      }
      if (i >= text.size()) return false;
      const char e = text[i++];
      switch (e) {
        case 'n': item.push_back('\n'); break;
        case 't': item.push_back('\t'); break;
        case 'r': item.push_back('\r'); break;
        default: item.push_back(e); break;  // \\ \' \" and anything else verbatim
      }
    }
    if (!closed) return false;
    out->push_back(std::move(item));
    skip_space();
    if (i < text.size()) {
      if (text[i] != ',') return false;
      ++i;
      skip_space();
    }
  }
  return true;
}

bool ReadModuleStack(absl::Span<const MetadataEntry> metadata, ModuleStack* out) {
  out->paths.clear();
  out->classes.clear();
  if (const absl::string_view* scopes = Find(metadata, kNameScopes)) {
    if (ParsePythonStringList(*scopes, &out->paths) && out->paths.size() >= 2) {
      out->paths.pop_back();  // the FX node
      if (const absl::string_view* classes = Find(metadata, kClassHierarchy)) {
        if (ParsePythonStringList(*classes, &out->classes) && !out->classes.empty()) {
          out->classes.pop_back();
        }
      }
    } else {
      out->paths.clear();
    }
  }
  // A namespace next to semmap's module entry was written by `semmap
  // annotate`: semmap's own answer, not the exporter's evidence.
  if (out->paths.empty() && Find(metadata, kModuleKey) == nullptr &&
      Find(metadata, kLegacySemmapModule) == nullptr) {
    const absl::string_view* ns = Find(metadata, kNamespace);
    if (ns == nullptr || !ParseNamespace(*ns, out)) return false;
  }
  if (out->classes.size() != out->paths.size()) out->classes.clear();
  for (const std::string& p : out->paths) {
    if (p == kEmptyStackMarker) return false;
  }
  return !out->paths.empty();
}

bool RewrittenByExporter(absl::Span<const MetadataEntry> metadata) {
  constexpr absl::string_view kRewriteRuleKey = "pkg.onnxscript.rewriter.rule_name";
  return std::any_of(metadata.begin(), metadata.end(),
                     [&](const MetadataEntry& kv) { return kv.first == kRewriteRuleKey; });
}

}  // namespace internal
}  // namespace semmap
