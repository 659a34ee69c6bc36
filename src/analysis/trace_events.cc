#include "analysis/trace_events.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/text.h"
#include "nlohmann/json.hpp"

namespace semmap {
namespace internal {
namespace {

using nlohmann::json;

// nlohmann's SAX events, tracked by depth. The first pass (on_event null)
// finds the event array and counts its elements; the second hands each
// event to on_event. Values nobody reads (other members, nested values)
// only move the depth.
class TraceReader : public nlohmann::json_sax<json> {
 public:
  using EventFn = std::function<absl::Status(std::size_t, const TraceEvent&)>;

  TraceReader(absl::string_view origin, const EventFn* on_event, int events_occurrence)
      : origin_(origin), on_event_(on_event), wanted_occurrence_(events_occurrence) {}

  bool null() override { return Scalar("null", std::string(), 0); }
  bool boolean(bool) override { return Scalar("boolean", std::string(), 0); }
  bool number_integer(number_integer_t v) override {
    return Scalar("number", absl::StrCat(v), static_cast<double>(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    return Scalar("number", absl::StrCat(v), static_cast<double>(v));
  }
  bool number_float(number_float_t v, const string_t& text) override {
    return Scalar("number", text, v);
  }
  bool string(string_t& s) override { return Scalar("string", std::move(s), 0); }
  bool binary(binary_t&) override { return Scalar("binary", std::string(), 0); }
  bool start_object(std::size_t) override { return Open(true); }
  bool start_array(std::size_t) override { return Open(false); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& k) override {
    if (depth_ == 1 && root_object_) {
      key_ = std::move(k);
    } else if (event_depth_ != 0 && depth_ == event_depth_) {
      key_ = std::move(k);
    } else if (args_depth_ != 0 && depth_ == args_depth_) {
      key_ = std::move(k);
    }
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    status_ = absl::InvalidArgumentError(absl::StrCat(origin_, ": not valid JSON at byte ",
                                                      position, ": ", Abbreviate(e.what(), 200)));
    return false;
  }

  const absl::Status& status() const { return status_; }
  bool root_seen() const { return root_type_ != nullptr; }
  const char* root_type() const { return root_type_; }
  bool root_object() const { return root_object_; }
  int events_occurrences() const { return occurrences_; }
  const char* events_type() const { return events_type_; }
  std::size_t events() const { return count_; }

 private:
  // Where the value about to be read sits, and what it is.
  void Value(const char* type, bool container, bool object) {
    if (depth_ == 0) {
      root_type_ = type;
      root_object_ = object;
      if (!object && container) StartEvents();
      return;
    }
    if (depth_ == 1 && root_object_ && key_ == "traceEvents") {
      ++occurrences_;
      events_type_ = type;
      // The first pass counts each one's events (the last count stands);
      // the second reads the last one.
      if (container && !object && (on_event_ == nullptr || occurrences_ == wanted_occurrence_)) {
        count_ = 0;
        StartEvents();
      }
      return;
    }
    if (events_depth_ != 0 && depth_ == events_depth_) {
      const std::size_t index = count_++;
      if (on_event_ == nullptr) return;
      if (!object) {
        Fail(absl::StrCat("/", index, ": expected a trace event (object), found ", type));
        return;
      }
      event_ = TraceEvent();
      event_index_ = index;
      event_depth_ = depth_ + 1;
      return;
    }
    if (on_event_ == nullptr) return;
    if (event_depth_ != 0 && depth_ == event_depth_) {
      if (key_ == "args") {
        event_.args = TraceField{type, std::string(), 0};
        event_.op_name = event_.provider = TraceField();
        if (object) args_depth_ = depth_ + 1;
      }
      return;
    }
  }

  bool Scalar(const char* type, std::string text, double number) {
    Value(type, false, false);
    if (!status_.ok()) return false;
    TraceField* field = nullptr;
    if (event_depth_ != 0 && depth_ == event_depth_) {
      field = key_ == "cat" ? &event_.cat : key_ == "name" ? &event_.name
              : key_ == "ph" ? &event_.ph : key_ == "dur" ? &event_.dur : nullptr;
    } else if (args_depth_ != 0 && depth_ == args_depth_) {
      field = key_ == "op_name" ? &event_.op_name : key_ == "provider" ? &event_.provider : nullptr;
    }
    if (field != nullptr) *field = TraceField{type, std::move(text), number};
    return true;
  }

  bool Open(bool object) {
    const char* type = object ? "object" : "array";
    Value(type, true, object);
    if (!status_.ok()) return false;
    // A container where a string or number was expected: its type only.
    if (event_depth_ != 0 && depth_ == event_depth_) {
      TraceField* field = key_ == "cat" ? &event_.cat : key_ == "name" ? &event_.name
                          : key_ == "ph" ? &event_.ph : key_ == "dur" ? &event_.dur : nullptr;
      if (field != nullptr) *field = TraceField{type, std::string(), 0};
    } else if (args_depth_ != 0 && depth_ == args_depth_) {
      TraceField* field = key_ == "op_name" ? &event_.op_name
                          : key_ == "provider" ? &event_.provider : nullptr;
      if (field != nullptr) *field = TraceField{type, std::string(), 0};
    }
    ++depth_;
    return true;
  }

  bool Close() {
    --depth_;
    if (args_depth_ != 0 && depth_ + 1 == args_depth_) {
      args_depth_ = 0;
    } else if (event_depth_ != 0 && depth_ + 1 == event_depth_) {
      event_depth_ = 0;
      absl::Status s = (*on_event_)(event_index_, event_);
      if (!s.ok()) {
        status_ = std::move(s);
        return false;
      }
    } else if (events_depth_ != 0 && depth_ + 1 == events_depth_) {
      events_depth_ = 0;
    }
    return true;
  }

  void StartEvents() { events_depth_ = depth_ + 1; }

  void Fail(absl::string_view what) {
    status_ = absl::InvalidArgumentError(absl::StrCat(origin_, ": ", pointer_prefix(), what));
  }
  std::string pointer_prefix() const { return root_object_ ? "/traceEvents" : ""; }

  absl::string_view origin_;
  const EventFn* on_event_;      // null in the first pass
  int wanted_occurrence_;        // which "traceEvents" member is read (the last)
  absl::Status status_;
  int depth_ = 0;                // containers open
  const char* root_type_ = nullptr;
  bool root_object_ = false;
  std::string key_;              // the last key at a level that is read
  int occurrences_ = 0;          // "traceEvents" members seen
  const char* events_type_ = nullptr;
  int events_depth_ = 0;         // depth of the event array's elements, 0 outside
  std::size_t count_ = 0;        // events seen
  int event_depth_ = 0;          // depth of the current event's members, 0 outside
  int args_depth_ = 0;           // depth of its args' members, 0 outside
  std::size_t event_index_ = 0;
  TraceEvent event_;
};

}  // namespace

absl::Status ReadTraceEvents(
    absl::string_view text, absl::string_view origin, std::size_t max_events,
    std::string* pointer,
    const std::function<absl::Status(std::size_t index, const TraceEvent& event)>& on_event) {
  TraceReader shape(origin, nullptr, -1);
  json::sax_parse(text.begin(), text.end(), &shape);
  if (!shape.status().ok()) return shape.status();
  // The object form keeps its last "traceEvents", as a JSON object would.
  std::string prefix;
  if (shape.root_object()) {
    if (shape.events_occurrences() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": not an ONNX Runtime profile: a JSON object without \"traceEvents\""));
    }
    prefix = "/traceEvents";
  }
  const char* array_type = shape.root_object() ? shape.events_type() : shape.root_type();
  if (array_type == nullptr || absl::string_view(array_type) != "array") {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": ", prefix.empty() ? "" : prefix + ": ",
                     "not an ONNX Runtime profile: expected a JSON array of trace events, found ",
                     array_type == nullptr ? "nothing" : array_type));
  }
  if (shape.events() > max_events) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", shape.events(),
                                                   " trace events, above the limit of ",
                                                   max_events));
  }
  *pointer = prefix;
  TraceReader events(origin, &on_event, std::max(shape.events_occurrences(), 1));
  json::sax_parse(text.begin(), text.end(), &events);
  return events.status();
}

}  // namespace internal
}  // namespace semmap
