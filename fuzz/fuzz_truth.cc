// Fuzz target for GroundTruth::Parse (semmap-eval's truth files).
// Properties:
//   - an error names the origin, stays short and is InvalidArgument (or
//     ResourceExhausted when memory runs out);
//   - a parsed truth holds no more answers than the text has bytes for
//     (each costs at least `"":""`), and parsing is deterministic.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "fuzz_util.h"
#include "semmap/truth.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr absl::string_view kOrigin = "truth.json";
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<semmap::GroundTruth> truth = semmap::GroundTruth::Parse(text, kOrigin);
  if (!truth.ok()) {
    semmap_fuzz::CheckErrorNamesOrigin(truth.status(), kOrigin);
    SEMMAP_FUZZ_CHECK(truth.status().code() == absl::StatusCode::kInvalidArgument ||
                      truth.status().code() == absl::StatusCode::kResourceExhausted);
    return 0;
  }
  SEMMAP_FUZZ_CHECK(truth->size() * 6 <= size);
  absl::StatusOr<semmap::GroundTruth> again = semmap::GroundTruth::Parse(text, kOrigin);
  SEMMAP_FUZZ_CHECK(again.ok() && again->size() == truth->size());
  return 0;
}
