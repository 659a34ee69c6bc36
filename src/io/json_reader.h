// The JSON reader of the manifest and the rule file: simdjson's DOM parser
// behind values that know their JSON pointer.
//
// JsonDocument::Parse validates the whole text before anything reads it
// (syntax, UTF-8, escapes, numbers, nesting, trailing bytes), so a broken file
// is "not valid JSON at byte N: cause" whatever part of it a reader would
// have looked at, and every later error is about meaning and names the JSON
// pointer of the value (`/modules/3/parameters/0/shape`).
//
//   SEMMAP_ASSIGN_OR_RETURN(JsonDocument doc,
//                           JsonDocument::Parse(text, "m.json", {1 << 20, 64}));
//   const JsonValue root = doc.root();
//   SEMMAP_ASSIGN_OR_RETURN(absl::string_view name, root.StringField("name", false));
//
// A JsonValue is a view: it refers to its document and to the JsonValue it
// was reached from (for its pointer), both of which must outlive it. Strings
// it returns live as long as the document.
#ifndef SEMMAP_SRC_IO_JSON_READER_H_
#define SEMMAP_SRC_IO_JSON_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "simdjson.h"

namespace semmap {
namespace internal {

struct JsonLimits {
  // Longer text is refused (InvalidArgument).
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  // `[`/`{` nesting deeper than this is refused (InvalidArgument).
  int max_depth = 64;
};

// Bytes a buffer must hold past the text for Parse(..., text_is_padded=true).
inline constexpr std::size_t kJsonPadding = simdjson::SIMDJSON_PADDING;

class JsonDocument;

class JsonValue {
 public:
  enum class Type { kNull, kBoolean, kNumber, kString, kArray, kObject };

  Type type() const;
  // "null", "boolean", "number", "string", "array" or "object".
  const char* type_name() const;
  bool is_null() const { return type() == Type::kNull; }
  bool is_boolean() const { return type() == Type::kBoolean; }
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }
  // A number written without fraction or exponent (it fits 64 bits: the
  // parser refuses larger ones).
  bool is_integer() const;
  bool is_unsigned() const;  // an integer above INT64_MAX
  bool is_number() const { return type() == Type::kNumber; }

  // Requires the matching is_*(); strings live as long as the document.
  absl::string_view string() const;
  bool boolean() const;
  std::int64_t int64() const;    // is_integer() && !is_unsigned()
  std::uint64_t uint64() const;  // is_unsigned()
  double number() const;         // is_number(), integers converted
  // Compact JSON text of the value.
  std::string Dump() const;

  // Elements of an array or fields of an object.
  std::size_t size() const;

  // The value of `key` in an object (the last one when the key repeats, as a
  // parser that builds a map keeps it), or nullopt.
  std::optional<JsonValue> Find(absl::string_view key) const;
  // One pass over an object for several keys: out[i] is the value of
  // keys[i] as Find() would return it. out.size() == keys.size().
  void Lookup(absl::Span<const absl::string_view> keys,
              absl::Span<std::optional<JsonValue>> out) const;
  // The value of `key`, or `missing required field "key"` at this value.
  absl::StatusOr<JsonValue> Field(absl::string_view key) const;
  // The string field `key`: missing, `expected a string, found T`, and
  // (unless allow_empty) `must not be empty` errors.
  absl::StatusOr<absl::string_view> StringField(absl::string_view key, bool allow_empty) const;
  // The string value itself, with the same errors as StringField().
  absl::StatusOr<absl::string_view> AsString(bool allow_empty) const;

  // Calls fn(const JsonValue& element) for each element of an array, in
  // order, until one returns an error.
  template <typename Fn>
  absl::Status ForEachElement(Fn&& fn) const;
  // Calls fn(absl::string_view key, const JsonValue& value) for each field
  // of an object, in file order, until one returns an error.
  template <typename Fn>
  absl::Status ForEachField(Fn&& fn) const;

  // This value's JSON pointer (RFC 6901; "" for the root).
  std::string Pointer() const;
  // InvalidArgument "<origin>: <pointer or />: <what>".
  absl::Status Error(absl::string_view what) const;
  // The same at the pointer of this value's child `key` / `index`, which
  // need not exist (a missing or mistyped field).
  absl::Status ErrorAt(absl::string_view key, absl::string_view what) const;
  absl::Status ErrorAt(std::size_t index, absl::string_view what) const;

 private:
  friend class JsonDocument;
  JsonValue(const JsonDocument* doc, simdjson::dom::element element, const JsonValue* parent,
            absl::string_view key, std::size_t index)
      : doc_(doc), element_(element), parent_(parent), key_(key), index_(index) {}
  JsonValue Child(simdjson::dom::element element, absl::string_view key) const {
    return JsonValue(doc_, element, this, key, kNoIndex);
  }
  JsonValue Child(simdjson::dom::element element, std::size_t index) const {
    return JsonValue(doc_, element, this, absl::string_view(), index);
  }
  void AppendPointer(std::string* out) const;

  static constexpr std::size_t kNoIndex = ~std::size_t{0};
  const JsonDocument* doc_;
  simdjson::dom::element element_;
  const JsonValue* parent_;  // nullptr for the root
  absl::string_view key_;    // set when reached through an object field
  std::size_t index_;        // set when reached through an array element
};

class JsonDocument {
 public:
  // Parses and validates `text`. `origin` names it in every message. With
  // `text_is_padded` the kJsonPadding bytes after the text must be readable
  // (see ReadFile's padding); otherwise the text is copied once.
  // InvalidArgument: above limits.max_bytes, nested deeper than
  // limits.max_depth (with the byte offset), or not valid JSON (with the
  // byte offset and the cause).
  static absl::StatusOr<JsonDocument> Parse(absl::string_view text, absl::string_view origin,
                                            const JsonLimits& limits,
                                            bool text_is_padded = false);

  // Parses `text` (copied, never padded) in place of this document with the
  // same origin and limits, reusing the parser's buffers: a reader of many
  // small values allocates once for the largest. Every JsonValue and string
  // of the previous text is gone. Errors as Parse, offsets in `text`.
  absl::Status Reparse(absl::string_view text);

  JsonDocument(JsonDocument&&) noexcept;
  JsonDocument& operator=(JsonDocument&&) noexcept;
  ~JsonDocument();

  JsonValue root() const { return JsonValue(this, root_, nullptr, absl::string_view(), JsonValue::kNoIndex); }
  absl::string_view origin() const { return origin_; }

 private:
  JsonDocument() = default;
  absl::Status ParseInto(absl::string_view text, bool text_is_padded);
  // Owns the tape and the unescaped strings every JsonValue refers to;
  // heap-held so that moving the document keeps them in place.
  std::unique_ptr<simdjson::dom::parser> parser_;
  simdjson::dom::element root_;
  std::string origin_;
  JsonLimits limits_;
};

// The first byte at which `text` stops being one valid JSON value (RFC 8259)
// and why, for messages; nullopt when it is valid. Linear; nesting is
// tracked without recursion.
struct JsonSyntaxError {
  std::size_t offset;
  std::string cause;
};
std::optional<JsonSyntaxError> FindJsonSyntaxError(absl::string_view text);

template <typename Fn>
absl::Status JsonValue::ForEachElement(Fn&& fn) const {
  std::size_t i = 0;
  const simdjson::dom::array array = element_.get_array().value_unsafe();
  for (simdjson::dom::element e : array) {
    const JsonValue child = Child(e, i++);
    absl::Status s = fn(child);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

template <typename Fn>
absl::Status JsonValue::ForEachField(Fn&& fn) const {
  const simdjson::dom::object object = element_.get_object().value_unsafe();
  for (simdjson::dom::key_value_pair field : object) {
    const absl::string_view key(field.key.data(), field.key.size());
    const JsonValue child = Child(field.value, key);
    absl::Status s = fn(key, child);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_IO_JSON_READER_H_
