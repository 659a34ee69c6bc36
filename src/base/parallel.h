// Two pieces of work on the machine's cores.
#ifndef SEMMAP_SRC_BASE_PARALLEL_H_
#define SEMMAP_SRC_BASE_PARALLEL_H_

#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>

namespace semmap {
namespace internal {

// semmap runs on at most two threads (std::thread; on one when none can be
// started). Work over the nodes of a graph goes on two cores from this many
// nodes on (loading's indexes, the mapping); below, starting a thread costs
// more than it saves. SemanticMapper::Open reads the model and the manifest
// on two whatever their size.
inline constexpr std::size_t kParallelNodes = std::size_t{1} << 16;

// Runs `first` on a second thread and `second` on this one, when
// `parallel`; otherwise, or when no thread can be started, both here, in
// that order. The two must share nothing they write. An exception from
// either is rethrown here once both have finished (the first one's when
// both throw), so a caller's catch clauses see it as if the work ran here.
template <typename First, typename Second>
void RunBoth(bool parallel, First&& first, Second&& second) {
  if (!parallel) {
    first();
    second();
    return;
  }
  std::exception_ptr first_error;
  std::thread thread;
  try {
    thread = std::thread([&first, &first_error] {
      try {
        first();
      } catch (...) {
        first_error = std::current_exception();
      }
    });
  } catch (const std::system_error&) {
    first();
    second();
    return;
  }
  std::exception_ptr second_error;
  try {
    second();
  } catch (...) {
    second_error = std::current_exception();
  }
  thread.join();
  if (first_error) std::rethrow_exception(first_error);
  if (second_error) std::rethrow_exception(second_error);
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_PARALLEL_H_
