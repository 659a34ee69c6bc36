#include "io/json_writer.h"

#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace semmap {
namespace internal {

std::string DumpJson(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// Bytes a JSON string cannot hold as they are: controls, '"', '\\', and
// every byte of a multi-byte (or invalid) UTF-8 sequence, left to nlohmann.
constexpr std::array<bool, 256> kNotPlain = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) table[c] = c < 0x20 || c >= 0x80 || c == '"' || c == '\\';
  return table;
}();

}  // namespace

void AppendJsonString(absl::string_view s, std::string* out) {
  bool plain = true;
  for (char c : s) {
    if (kNotPlain[static_cast<unsigned char>(c)]) {
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

void AppendJsonNumber(double value, std::string* out) {
  // A list repeats a few values (confidences): the last one's text is kept.
  thread_local double last = 0.0;
  thread_local std::string last_text = "0.0";
  if (std::memcmp(&value, &last, sizeof value) != 0) {
    last = value;
    last_text = DumpJson(nlohmann::json(value));
  }
  out->append(last_text);
}

void JsonObjectText::Key(absl::string_view key) {
  out_->append(empty_ ? "{\n" : ",\n");
  empty_ = false;
  out_->append(static_cast<std::size_t>(indent_ + 2), ' ');
  AppendJsonString(key, out_);
  out_->append(": ");
}

void JsonObjectText::String(absl::string_view key, absl::string_view value) {
  Key(key);
  AppendJsonString(value, out_);
}

void JsonObjectText::Number(absl::string_view key, double value) {
  Key(key);
  AppendJsonNumber(value, out_);
}

void JsonObjectText::Unsigned(absl::string_view key, std::uint64_t value) {
  Key(key);
  absl::StrAppend(out_, value);
}

void JsonObjectText::Null(absl::string_view key) {
  Key(key);
  out_->append("null");
}

void JsonObjectText::Strings(absl::string_view key, absl::Span<const absl::string_view> values) {
  Key(key);
  if (values.empty()) {
    out_->append("[]");
    return;
  }
  out_->push_back('[');
  for (std::size_t i = 0; i < values.size(); ++i) {
    out_->append(i == 0 ? "\n" : ",\n");
    out_->append(static_cast<std::size_t>(indent_ + 4), ' ');
    AppendJsonString(values[i], out_);
  }
  out_->push_back('\n');
  out_->append(static_cast<std::size_t>(indent_ + 2), ' ');
  out_->push_back(']');
}

void JsonObjectText::Close() {
  if (empty_) {
    out_->append("{}");
    return;
  }
  out_->push_back('\n');
  out_->append(static_cast<std::size_t>(indent_), ' ');
  out_->push_back('}');
}

void FlushLarge(std::ostream& out, std::string* text) {
  if (text->size() < (std::size_t{1} << 20)) return;
  out.write(text->data(), static_cast<std::streamsize>(text->size()));
  text->clear();
}

void WriteJsonWithList(std::ostream& out, const nlohmann::json& head,
                       const std::string& list_key, std::size_t count,
                       const std::function<void(std::size_t, std::string*)>& item) {
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
      item(i, &text);
      FlushLarge(out, &text);
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

}  // namespace internal
}  // namespace semmap
