#include "io/json_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "io/json_nesting.h"

namespace semmap {
namespace internal {
namespace {

using simdjson::dom::element_type;

absl::string_view View(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// RFC 6901: "~" and "/" inside a key are escaped.
void AppendEscapedKey(absl::string_view key, std::string* out) {
  for (char c : key) {
    if (c == '~') {
      out->append("~0");
    } else if (c == '/') {
      out->append("~1");
    } else {
      out->push_back(c);
    }
  }
}

// --- Locating a syntax error (error path only) ----------------------------

class SyntaxScanner {
 public:
  explicit SyntaxScanner(absl::string_view text) : t_(text) {}

  std::optional<JsonSyntaxError> Run() {
    enum class State { kValue, kKey, kAfterValue } state = State::kValue;
    std::vector<char> open;  // '[' or '{' of each enclosing container
    while (true) {
      SkipSpace();
      if (state == State::kKey) {
        if (!At('"')) return Fail("expected a string key");
        if (!String()) return error_;
        SkipSpace();
        if (!At(':')) return Fail("expected ':' after an object key");
        ++i_;
        state = State::kValue;
        continue;
      }
      if (state == State::kAfterValue) {
        if (open.empty()) {
          if (i_ != t_.size()) return Fail("unexpected bytes after the JSON value");
          return std::nullopt;
        }
        const char close = open.back() == '[' ? ']' : '}';
        if (At(',')) {
          ++i_;
          state = open.back() == '[' ? State::kValue : State::kKey;
        } else if (At(close)) {
          ++i_;
          open.pop_back();
        } else {
          return Fail(close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
        }
        continue;
      }
      // State::kValue
      if (i_ == t_.size()) return Fail("unexpected end of input, expected a value");
      const char c = t_[i_];
      if (c == '[' || c == '{') {
        ++i_;
        open.push_back(c);
        SkipSpace();
        if (At(c == '[' ? ']' : '}')) {
          ++i_;
          open.pop_back();
          state = State::kAfterValue;
        } else {
          state = c == '[' ? State::kValue : State::kKey;
        }
        continue;
      }
      bool ok;
      if (c == '"') {
        ok = String();
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        ok = Number();
      } else if (c == 't' || c == 'f' || c == 'n') {
        ok = Literal();
      } else {
        return Fail("unexpected character, expected a value");
      }
      if (!ok) return error_;
      state = State::kAfterValue;
    }
  }

 private:
  bool At(char c) const { return i_ < t_.size() && t_[i_] == c; }
  void SkipSpace() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) {
      ++i_;
    }
  }
  std::optional<JsonSyntaxError> Fail(absl::string_view cause) {
    error_ = JsonSyntaxError{i_, std::string(cause)};
    return error_;
  }
  bool FailAt(std::size_t at, absl::string_view cause) {
    error_ = JsonSyntaxError{at, std::string(cause)};
    return false;
  }
  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // Four hex digits at i_ (after "\u"), or -1.
  int Unit() {
    if (t_.size() - i_ < 4) return -1;
    int v = 0;
    for (int k = 0; k < 4; ++k) {
      const int h = Hex(t_[i_ + k]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    i_ += 4;
    return v;
  }
  // One UTF-8 sequence at i_ (a lead byte >= 0x80): shortest form, no
  // surrogates, at most U+10FFFF.
  bool Utf8() {
    const auto byte = [this](std::size_t k) { return static_cast<unsigned char>(t_[i_ + k]); };
    const unsigned char lead = byte(0);
    std::size_t n;
    unsigned int cp;
    if (lead >= 0xC2 && lead <= 0xDF) {
      n = 2, cp = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      n = 3, cp = lead & 0x0F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      n = 4, cp = lead & 0x07;
    } else {
      return FailAt(i_, "invalid UTF-8");
    }
    if (t_.size() - i_ < n) return FailAt(i_, "invalid UTF-8 (truncated sequence)");
    for (std::size_t k = 1; k < n; ++k) {
      if ((byte(k) & 0xC0) != 0x80) return FailAt(i_, "invalid UTF-8");
      cp = (cp << 6) | (byte(k) & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return FailAt(i_, "invalid UTF-8");
    }
    i_ += n;
    return true;
  }
  bool String() {
    const std::size_t start = i_++;
    while (i_ < t_.size()) {
      const unsigned char c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return FailAt(i_, "control character in a string (must be escaped)");
      if (c >= 0x80) {
        if (!Utf8()) return false;
        continue;
      }
      if (c != '\\') {
        ++i_;
        continue;
      }
      const std::size_t escape = i_++;
      if (i_ == t_.size()) break;
      const char e = t_[i_++];
      if (e == 'u') {
        const int unit = Unit();
        if (unit < 0) return FailAt(escape, "invalid \\u escape (expected four hex digits)");
        if (unit >= 0xDC00 && unit <= 0xDFFF) return FailAt(escape, "unpaired UTF-16 surrogate");
        if (unit >= 0xD800 && unit <= 0xDBFF) {
          if (t_.size() - i_ < 2 || t_[i_] != '\\' || t_[i_ + 1] != 'u') {
            return FailAt(escape, "unpaired UTF-16 surrogate");
          }
          i_ += 2;
          const int low = Unit();
          if (low < 0xDC00 || low > 0xDFFF) return FailAt(escape, "unpaired UTF-16 surrogate");
        }
      } else if (absl::string_view("\"\\/bfnrt").find(e) == absl::string_view::npos) {
        return FailAt(escape, "invalid escape in a string");
      }
    }
    return FailAt(start, "unterminated string");
  }
  bool Number() {
    const std::size_t start = i_;
    const bool negative = At('-');
    if (negative) ++i_;
    const auto digits = [this] {
      const std::size_t from = i_;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      return i_ - from;
    };
    if (At('0')) {
      ++i_;
    } else if (digits() == 0) {
      return FailAt(start, "invalid number");
    }
    bool integer = true;
    if (At('.')) {
      ++i_;
      integer = false;
      if (digits() == 0) return FailAt(start, "invalid number (no digits after '.')");
    }
    if (At('e') || At('E')) {
      ++i_;
      integer = false;
      if (At('+') || At('-')) ++i_;
      if (digits() == 0) return FailAt(start, "invalid number (no digits in the exponent)");
    }
    const std::string text(t_.substr(start, i_ - start));
    if (integer) {
      // The reader keeps integers as 64-bit values.
      const std::size_t n = text.size() - (negative ? 1 : 0);
      const absl::string_view limit = negative ? "9223372036854775808" : "18446744073709551615";
      const absl::string_view magnitude = absl::string_view(text).substr(negative ? 1 : 0);
      if (n > limit.size() || (n == limit.size() && magnitude > limit)) {
        return FailAt(start, absl::StrCat("number overflow: integer ", Abbreviate(text, 40),
                                          " is outside the 64-bit range"));
      }
      return true;
    }
    errno = 0;
    const double v = std::strtod(text.c_str(), nullptr);
    if (std::isinf(v)) {
      return FailAt(start, absl::StrCat("number overflow: ", Abbreviate(text, 40),
                                        " is outside the range of a double"));
    }
    return true;
  }
  bool Literal() {
    for (absl::string_view word : {"true", "false", "null"}) {
      if (t_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return true;
      }
    }
    return FailAt(i_, "invalid literal (expected true, false or null)");
  }

  absl::string_view t_;
  std::size_t i_ = 0;
  std::optional<JsonSyntaxError> error_;
};

}  // namespace

std::optional<JsonSyntaxError> FindJsonSyntaxError(absl::string_view text) {
  return SyntaxScanner(text).Run();
}

// --- JsonValue --------------------------------------------------------------

JsonValue::Type JsonValue::type() const {
  switch (element_.type()) {
    case element_type::ARRAY:
      return Type::kArray;
    case element_type::OBJECT:
      return Type::kObject;
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
      return Type::kNumber;
    case element_type::STRING:
      return Type::kString;
    case element_type::BOOL:
      return Type::kBoolean;
    case element_type::NULL_VALUE:
      break;
  }
  return Type::kNull;
}

const char* JsonValue::type_name() const {
  switch (type()) {
    case Type::kNull:
      return "null";
    case Type::kBoolean:
      return "boolean";
    case Type::kNumber:
      return "number";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
  }
  return "null";
}

bool JsonValue::is_integer() const {
  return element_.type() == element_type::INT64 || element_.type() == element_type::UINT64;
}

bool JsonValue::is_unsigned() const { return element_.type() == element_type::UINT64; }

absl::string_view JsonValue::string() const {
  const std::string_view s = element_.get_string().value_unsafe();
  return View(s);
}

bool JsonValue::boolean() const { return element_.get_bool().value_unsafe(); }

std::int64_t JsonValue::int64() const { return element_.get_int64().value_unsafe(); }

std::uint64_t JsonValue::uint64() const { return element_.get_uint64().value_unsafe(); }

double JsonValue::number() const {
  if (element_.type() == element_type::INT64) return static_cast<double>(int64());
  if (element_.type() == element_type::UINT64) return static_cast<double>(uint64());
  return element_.get_double().value_unsafe();
}

std::string JsonValue::Dump() const { return simdjson::to_string(element_); }

std::size_t JsonValue::size() const {
  if (is_array()) {
    const simdjson::dom::array array = element_.get_array().value_unsafe();
    return array.size();
  }
  if (is_object()) {
    const simdjson::dom::object object = element_.get_object().value_unsafe();
    return object.size();
  }
  return 0;
}

std::optional<JsonValue> JsonValue::Find(absl::string_view key) const {
  std::optional<JsonValue> out;
  Lookup(absl::MakeConstSpan(&key, 1), absl::MakeSpan(&out, 1));
  return out;
}

void JsonValue::Lookup(absl::Span<const absl::string_view> keys,
                       absl::Span<std::optional<JsonValue>> out) const {
  for (auto& o : out) o.reset();
  if (!is_object()) return;
  const simdjson::dom::object object = element_.get_object().value_unsafe();
  for (simdjson::dom::key_value_pair field : object) {
    const absl::string_view key = View(field.key);
    for (std::size_t k = 0; k < keys.size(); ++k) {
      if (keys[k] == key) {
        // The last of repeated keys wins; out[k] keeps a view of the
        // document's key bytes, which outlive this call.
        out[k].emplace(Child(field.value, key));
        break;
      }
    }
  }
}

absl::StatusOr<JsonValue> JsonValue::Field(absl::string_view key) const {
  std::optional<JsonValue> v = Find(key);
  if (!v) return Error(absl::StrCat("missing required field \"", key, "\""));
  return *v;
}

absl::StatusOr<absl::string_view> JsonValue::AsString(bool allow_empty) const {
  if (!is_string()) return Error(absl::StrCat("expected a string, found ", type_name()));
  const absl::string_view s = string();
  if (!allow_empty && s.empty()) return Error("must not be empty");
  return s;
}

absl::StatusOr<absl::string_view> JsonValue::StringField(absl::string_view key,
                                                         bool allow_empty) const {
  std::optional<JsonValue> v = Find(key);
  if (!v) return Error(absl::StrCat("missing required field \"", key, "\""));
  return v->AsString(allow_empty);
}

void JsonValue::AppendPointer(std::string* out) const {
  if (parent_ == nullptr) return;
  parent_->AppendPointer(out);
  out->push_back('/');
  if (index_ != kNoIndex) {
    absl::StrAppend(out, index_);
  } else {
    AppendEscapedKey(key_, out);
  }
}

std::string JsonValue::Pointer() const {
  std::string out;
  AppendPointer(&out);
  return out;
}

namespace {

// A JSON pointer as messages quote it: the keys are the file's, hostile
// ones as long as the file, so the pointer is shortened like any quoted
// name (a message stays short whatever the input).
constexpr std::size_t kMaxQuotedPointer = 256;

}  // namespace

absl::Status JsonValue::Error(absl::string_view what) const {
  std::string pointer = Pointer();
  return absl::InvalidArgumentError(absl::StrCat(
      doc_->origin(), ": ", pointer.empty() ? "/" : Abbreviate(pointer, kMaxQuotedPointer), ": ",
      what));
}

absl::Status JsonValue::ErrorAt(absl::string_view key, absl::string_view what) const {
  std::string pointer = Pointer();
  pointer.push_back('/');
  AppendEscapedKey(key, &pointer);
  return absl::InvalidArgumentError(absl::StrCat(
      doc_->origin(), ": ", Abbreviate(pointer, kMaxQuotedPointer), ": ", what));
}

absl::Status JsonValue::ErrorAt(std::size_t index, absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(
      doc_->origin(), ": ", Abbreviate(absl::StrCat(Pointer(), "/", index), kMaxQuotedPointer),
      ": ", what));
}

// --- JsonDocument -----------------------------------------------------------

JsonDocument::JsonDocument(JsonDocument&&) noexcept = default;
JsonDocument& JsonDocument::operator=(JsonDocument&&) noexcept = default;
JsonDocument::~JsonDocument() = default;

absl::StatusOr<JsonDocument> JsonDocument::Parse(absl::string_view text, absl::string_view origin,
                                                 const JsonLimits& limits, bool text_is_padded) {
  JsonDocument doc;
  doc.origin_ = std::string(origin);
  doc.limits_ = limits;
  absl::Status parsed = doc.ParseInto(text, text_is_padded);
  if (!parsed.ok()) return parsed;
  return doc;
}

absl::Status JsonDocument::Reparse(absl::string_view text) { return ParseInto(text, false); }

absl::Status JsonDocument::ParseInto(absl::string_view text, bool text_is_padded) {
  const absl::string_view origin = origin_;
  const JsonLimits& limits = limits_;
  if (text.size() > limits.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": JSON text is ", text.size(),
                                                   " bytes, above the limit of ",
                                                   limits.max_bytes, " bytes"));
  }
  if (text.size() >= simdjson::SIMDJSON_MAXSIZE_BYTES) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": JSON text is ", text.size(), " bytes, above the ",
        simdjson::SIMDJSON_MAXSIZE_BYTES, " bytes the JSON reader handles"));
  }
  simdjson::error_code error = simdjson::SUCCESS;
  if (parser_ == nullptr) {
    // Sized for this text only (simdjson's minimum is 32 bytes); a larger
    // text given to Reparse grows it.
    parser_ = std::make_unique<simdjson::dom::parser>();
    error = parser_->allocate(std::max<std::size_t>(text.size(), 32),
                              static_cast<std::size_t>(std::max(limits.max_depth, 1)));
  }
  if (error == simdjson::SUCCESS) {
    // An empty view may point nowhere; simdjson copies from the pointer even
    // for zero bytes, so it gets a real (empty) buffer instead.
    const bool empty = text.empty();
    error = parser_->parse(empty ? "" : text.data(), text.size(), empty || !text_is_padded)
                .get(root_);
  }
  if (error == simdjson::SUCCESS) return absl::OkStatus();
  if (error == simdjson::MEMALLOC) throw std::bad_alloc();
  // Nesting first, over the whole text, as a reader that checks it before
  // parsing would report it; then the first syntax error and its byte.
  absl::Status nesting = CheckJsonNesting(text, limits.max_depth, origin);
  if (!nesting.ok()) return nesting;
  if (error == simdjson::DEPTH_ERROR) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": JSON nested deeper than ", limits.max_depth, " levels"));
  }
  if (std::optional<JsonSyntaxError> syntax = FindJsonSyntaxError(text)) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not valid JSON at byte ",
                                                   syntax->offset, ": ", syntax->cause));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(origin, ": not valid JSON: ", simdjson::error_message(error)));
}

}  // namespace internal
}  // namespace semmap
