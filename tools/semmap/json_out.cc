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

void WriteJsonWithList(std::ostream& out, const nlohmann::json& head,
                       const std::string& list_key, std::size_t count,
                       const std::function<nlohmann::json(std::size_t)>& item) {
  std::string text = "{";
  bool first = true;
  auto member = [&](const std::string& key) {
    text += first ? "\n  " : ",\n  ";
    first = false;
    AppendJsonString(key, &text);
    text += ": ";
  };
  auto write_list = [&] {
    member(list_key);
    if (count == 0) {
      text += "[]";
      return;
    }
    text += "[";
    for (std::size_t i = 0; i < count; ++i) {
      text += i == 0 ? "\n    " : ",\n    ";
      AppendIndentedJson(item(i), 4, &text);
      if (text.size() >= (std::size_t{1} << 20)) {  // written as it grows
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        text.clear();
      }
    }
    text += "\n  ]";
  };
  bool listed = false;
  for (auto it = head.begin(); it != head.end(); ++it) {  // keys in order
    if (!listed && list_key < it.key()) {
      write_list();
      listed = true;
    }
    member(it.key());
    AppendIndentedJson(it.value(), 2, &text);
  }
  if (!listed) write_list();
  text += "\n}\n";
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace semmap_cli
