// Helpers shared by semmap's fuzz targets.
#ifndef SEMMAP_FUZZ_FUZZ_UTIL_H_
#define SEMMAP_FUZZ_FUZZ_UTIL_H_

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

// A property the target checks: unlike assert(), active in every build, and
// it aborts so libFuzzer records the input as a crash.
#define SEMMAP_FUZZ_CHECK(cond)                                                    \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                \
    }                                                                              \
  } while (false)

namespace semmap_fuzz {

// An error status names its origin first (every parser's contract) and
// quotes hostile input abbreviated: its message stays short whatever the
// input's size.
inline void CheckErrorNamesOrigin(const absl::Status& status, absl::string_view origin) {
  SEMMAP_FUZZ_CHECK(!status.ok());
  SEMMAP_FUZZ_CHECK(status.message().substr(0, origin.size()) == origin);
  SEMMAP_FUZZ_CHECK(status.message().size() <= origin.size() + 1024);
}

}  // namespace semmap_fuzz

#endif  // SEMMAP_FUZZ_FUZZ_UTIL_H_
