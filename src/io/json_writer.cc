#include "io/json_writer.h"

#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace semmap {
namespace internal {

namespace {

// nlohmann's own text of `value`, with bytes that are not UTF-8 written as
// U+FFFD instead of an exception.
std::string Dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

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
    out->append(Dump(nlohmann::json(std::string(s))));
    return;
  }
  out->push_back('"');
  out->append(s.data(), s.size());
  out->push_back('"');
}

void AppendJsonNumber(double value, std::string* out) {
  // A list repeats a few values (confidences): the last one's text is kept.
  thread_local double last = 0.0;
  thread_local std::string last_text = "0.0";
  if (std::memcmp(&value, &last, sizeof value) != 0) {
    last = value;
    last_text = Dump(nlohmann::json(value));
  }
  out->append(last_text);
}

void JsonWriter::NewLine(int depth) {
  out_->push_back('\n');
  out_->append(static_cast<std::size_t>(indent_ * depth), ' ');
}

void JsonWriter::Value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (empty_.empty()) return;  // the document itself
  if (!empty_.back()) out_->push_back(',');
  empty_.back() = false;
  if (indent_ >= 0) NewLine(depth_ + static_cast<int>(empty_.size()));
}

JsonWriter& JsonWriter::Key(absl::string_view key) {
  Value();
  AppendJsonString(key, out_);
  out_->append(indent_ < 0 ? ":" : ": ");
  after_key_ = true;
  return *this;
}

void JsonWriter::Open(char bracket) {
  Value();
  out_->push_back(bracket);
  empty_.push_back(true);
}

void JsonWriter::Close(char bracket) {
  const bool empty = empty_.back();
  empty_.pop_back();
  if (!empty && indent_ >= 0) NewLine(depth_ + static_cast<int>(empty_.size()));
  out_->push_back(bracket);
}

void JsonWriter::String(absl::string_view value) {
  Value();
  AppendJsonString(value, out_);
}

void JsonWriter::Number(double value) {
  Value();
  AppendJsonNumber(value, out_);
}

void JsonWriter::Unsigned(std::uint64_t value) {
  Value();
  absl::StrAppend(out_, value);
}

void JsonWriter::Signed(std::int64_t value) {
  Value();
  absl::StrAppend(out_, value);
}

void JsonWriter::Bool(bool value) {
  Value();
  out_->append(value ? "true" : "false");
}

void JsonWriter::Null() {
  Value();
  out_->append("null");
}

void JsonWriter::StringOrNull(absl::string_view value) {
  if (value.empty()) {
    Null();
  } else {
    String(value);
  }
}

void JsonWriter::Strings(absl::Span<const std::string> values) {
  BeginArray();
  for (const std::string& v : values) String(v);
  EndArray();
}

void JsonWriter::Strings(absl::Span<const absl::string_view> values) {
  BeginArray();
  for (absl::string_view v : values) String(v);
  EndArray();
}

void FlushLarge(std::ostream& out, std::string* text) {
  if (text->size() < (std::size_t{1} << 20)) return;
  out.write(text->data(), static_cast<std::streamsize>(text->size()));
  text->clear();
}

}  // namespace internal
}  // namespace semmap
