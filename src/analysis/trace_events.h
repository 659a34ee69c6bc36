// The events of a Chrome trace (ONNX Runtime's profiles), read one at a
// time: no document is built, so memory is what the caller keeps of the
// events, not a multiple of the file.
#ifndef SEMMAP_SRC_ANALYSIS_TRACE_EVENTS_H_
#define SEMMAP_SRC_ANALYSIS_TRACE_EVENTS_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// One member of an event as written: absent (type null), a string (text),
// a number (value, and text as written), or another JSON type (type only).
struct TraceField {
  const char* type = nullptr;  // "string", "number", "object", "array", "boolean", "null"
  std::string text;
  double number = 0;

  bool present() const { return type != nullptr; }
  bool is(absl::string_view t) const { return type != nullptr && t == type; }
};

// The members of one event semmap reads; the others are skipped unread.
// A member given twice keeps its last value, as a JSON object would.
struct TraceEvent {
  TraceField cat, name, ph, dur;
  TraceField args;               // its type; the members below when an object
  TraceField op_name, provider;  // args.op_name, args.provider
};

// Reads `text`, a JSON array of trace events or an object whose
// "traceEvents" member is one, in two passes over the text: the first
// checks the syntax, the shape and the number of events; the second calls
// `on_event` with each event in order (its index, the event) and stops at
// its first error. *pointer is set to the JSON pointer of the event array
// ("" or "/traceEvents") before the first call.
//
// InvalidArgument, messages starting with `origin`: not valid JSON (with
// the byte offset), not a trace (a JSON object without "traceEvents", or
// not an array), more than `max_events` events, or an event that is not
// an object ("/12: expected a trace event (object), found number").
absl::Status ReadTraceEvents(
    absl::string_view text, absl::string_view origin, std::size_t max_events,
    std::string* pointer,
    const std::function<absl::Status(std::size_t index, const TraceEvent& event)>& on_event);

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_ANALYSIS_TRACE_EVENTS_H_
