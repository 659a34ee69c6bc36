// Where a long call spends its time: named phases, in the order they
// ended, each with its wall time. The mapper keeps the phases of its
// making (MapperAccess::Phases) for the benchmark (bench/semmap_bench
// --open prints them per phase); a phase costs two clock reads.
//
//   PhaseTimes phases;
//   PhaseClock clock;
//   LoadThings();
//   phases.Add("load", clock.Lap());
//
// Phases that ran side by side (RunBoth) are each timed on their own
// thread and added after both end; their times overlap.
#ifndef SEMMAP_SRC_BASE_PHASE_TIMES_H_
#define SEMMAP_SRC_BASE_PHASE_TIMES_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace semmap {
namespace internal {

// Seconds since it was made, or since the last Lap().
class PhaseClock {
 public:
  PhaseClock() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  double Lap() {
    const auto now = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

struct Phase {
  std::string name;
  double seconds = 0;
};

class PhaseTimes {
 public:
  void Add(absl::string_view name, double seconds) {
    phases_.push_back({std::string(name), seconds});
  }
  // `inner`'s phases after these, each name prefixed with `prefix` and ": "
  // (a call's phases inside another's: "reference: pairing").
  void Append(absl::string_view prefix, const PhaseTimes& inner) {
    for (const Phase& p : inner.phases_) phases_.push_back({absl::StrCat(prefix, ": ", p.name), p.seconds});
  }
  // `outer`'s phases before these.
  void Prepend(const PhaseTimes& outer) {
    phases_.insert(phases_.begin(), outer.phases_.begin(), outer.phases_.end());
  }
  const std::vector<Phase>& phases() const { return phases_; }

 private:
  std::vector<Phase> phases_;
};

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_PHASE_TIMES_H_
