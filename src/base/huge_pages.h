// Transparent huge pages for large arrays filled right after allocation.
#ifndef SEMMAP_SRC_BASE_HUGE_PAGES_H_
#define SEMMAP_SRC_BASE_HUGE_PAGES_H_

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace semmap {
namespace internal {

// Asks the kernel to back the whole 2 MB pages inside [data, data + bytes)
// with transparent huge pages, before the memory is first touched: one page
// fault and one TLB entry per 2 MB instead of per 4 kB. Advice only: a
// kernel without it, or a refusal, changes nothing else. Small arrays (under
// one huge page) are left alone.
inline void AdviseHugePages(const void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t end = begin + bytes;
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  if (data != nullptr && end >= first + kHuge) {
    madvise(reinterpret_cast<void*>(first), (end - first) & ~(kHuge - 1), MADV_HUGEPAGE);
  }
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_HUGE_PAGES_H_
