#include "json_out.h"

namespace semmap_cli {

std::string DumpJson(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void AppendJsonString(absl::string_view s, std::string* out) {
  bool plain = true;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (!plain) {  // escapes and UTF-8 checks: nlohmann's own
    out->append(DumpJson(nlohmann::json(std::string(s)), -1));
    return;
  }
  out->push_back('"');
  out->append(s.data(), s.size());
  out->push_back('"');
}

void AppendIndentedJson(const nlohmann::json& value, int indent, std::string* out) {
  // Newlines occur only between tokens (strings escape theirs).
  for (char c : DumpJson(value)) {
    out->push_back(c);
    if (c == '\n') out->append(static_cast<std::size_t>(indent), ' ');
  }
}

}  // namespace semmap_cli
