// Work split over the machine's cores: two pieces (RunBoth), or one range
// of work per core (RunWorkers).
#ifndef SEMMAP_SRC_BASE_PARALLEL_H_
#define SEMMAP_SRC_BASE_PARALLEL_H_

#include <algorithm>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace semmap {
namespace internal {

// semmap's steps run on at most two threads (std::thread; on one when none
// can be started), except the wire walk of a large graph's nodes and the
// deflation of a large provenance record (io/deflate.h), which run on
// every core (RunWorkers). Work over the nodes of a graph goes on
// two cores from this many nodes on (loading's indexes, the mapping);
// below, starting a thread costs more than it saves. SemanticMapper::Open
// reads the model and the manifest on two whatever their size.
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

// How many workers share `items` pieces of work: one per core
// (std::thread::hardware_concurrency, 1 when unknown), each given at least
// `min_items`, at most `max_workers`; 1 for small work.
inline std::size_t WorkerCount(std::size_t items, std::size_t min_items,
                               std::size_t max_workers = 64) {
  const std::size_t cores = std::max(1U, std::thread::hardware_concurrency());
  const std::size_t by_size = min_items == 0 ? items : items / min_items;
  return std::max<std::size_t>(1, std::min({cores, by_size, max_workers}));
}

// Runs `work(i)` for i in [0, count): i = 0 on this thread, the others on
// threads of their own (on this one, in order, when no thread can be
// started). The calls must share nothing they write. An exception is
// rethrown here once all have finished (the lowest i's when several throw).
template <typename Work>
void RunWorkers(std::size_t count, Work&& work) {
  std::vector<std::exception_ptr> errors(count);
  std::vector<std::thread> threads;
  std::size_t started = 1;
  auto run = [&work, &errors](std::size_t i) {
    try {
      work(i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  try {
    threads.reserve(count);
    for (; started < count; ++started) threads.emplace_back(run, started);
  } catch (...) {
    // No thread, or no memory for one: the rest run here, after the first.
  }
  run(0);
  for (std::size_t i = started; i < count; ++i) run(i);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_PARALLEL_H_
