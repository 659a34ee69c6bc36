// Fuzz target for Profile::Parse (ONNX Runtime profiles). Properties:
//   - an error names the origin and is InvalidArgument;
//   - a parsed profile's nodes have distinct names, at least one call each,
//     and add up to its kernel time and kernel events (unless a sum
//     saturated at INT64_MAX);
//   - a max_events limit below the number of trace events refuses the text.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "semmap/profile.h"

namespace {

constexpr absl::string_view kOrigin = "fuzz.json";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<semmap::Profile> p = semmap::Profile::Parse(text, kOrigin);
  if (!p.ok()) {
    semmap_fuzz::CheckErrorNamesOrigin(p.status(), kOrigin);
    SEMMAP_FUZZ_CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  std::set<std::string> names;
  std::int64_t us = 0, calls = 0;
  bool saturated = p->kernel_us() == std::numeric_limits<std::int64_t>::max();
  for (const semmap::ProfiledNode& n : p->nodes()) {
    SEMMAP_FUZZ_CHECK(names.insert(n.name).second);
    SEMMAP_FUZZ_CHECK(n.calls >= 1 && n.us >= 0);
    saturated = saturated || n.us == std::numeric_limits<std::int64_t>::max();
    if (!saturated) us += n.us;
    calls += n.calls;
  }
  SEMMAP_FUZZ_CHECK(calls == p->kernel_events());
  if (!saturated) SEMMAP_FUZZ_CHECK(us == p->kernel_us());
  SEMMAP_FUZZ_CHECK(p->runs() >= 0 && p->run_us() >= 0 && p->skipped_events() >= 0);
  const std::int64_t events = p->kernel_events() + p->runs() + p->skipped_events();
  if (events > 0) {
    semmap::ProfileOptions small;
    small.max_events = static_cast<std::size_t>(events - 1);
    absl::StatusOr<semmap::Profile> refused = semmap::Profile::Parse(text, kOrigin, small);
    SEMMAP_FUZZ_CHECK(!refused.ok());
    SEMMAP_FUZZ_CHECK(refused.status().code() == absl::StatusCode::kInvalidArgument);
  }
  return 0;
}
