// UninitVector: a std::vector whose new elements are not written when it
// grows by resize() or emplace_back() without arguments.
//
// A large array sized once and then filled (a graph's node records, the
// nodes' lists) was written twice by std::vector: zeros or default values on
// resize, on one thread, then the values. Each fresh page is also zeroed by
// the kernel on first touch, by the thread that touches it first: left
// unwritten, the array is first touched by the workers that fill it, so the
// kernel's zeroing is spread over them and the second write is gone.
//
// Only for implicit-lifetime types (trivially copyable and destructible),
// whose objects the allocation itself creates. Every element must be written
// before it is read: emplace_back() and resize() leave it as the memory was.
// Elements given a value (push_back, insert, emplace_back(x), assign) are
// written as by std::vector.
#ifndef SEMMAP_SRC_BASE_UNINIT_VECTOR_H_
#define SEMMAP_SRC_BASE_UNINIT_VECTOR_H_

#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace semmap {
namespace internal {

template <typename T>
class UninitAllocator : public std::allocator<T> {
 public:
  static_assert(std::is_trivially_copyable<T>::value && std::is_trivially_destructible<T>::value,
                "UninitAllocator leaves elements unwritten: implicit-lifetime types only");
  template <typename U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <typename U>
  UninitAllocator(const UninitAllocator<U>& /*other*/) noexcept {}

  // Without a value: nothing written (the point of the allocator).
  template <typename U>
  void construct(U* /*p*/) noexcept {}
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T, typename U>
bool operator==(const UninitAllocator<T>& /*a*/, const UninitAllocator<U>& /*b*/) noexcept {
  return true;
}
template <typename T, typename U>
bool operator!=(const UninitAllocator<T>& /*a*/, const UninitAllocator<U>& /*b*/) noexcept {
  return false;
}

template <typename T>
using UninitVector = std::vector<T, UninitAllocator<T>>;

}  // namespace internal
}  // namespace semmap

#endif  // SEMMAP_SRC_BASE_UNINIT_VECTOR_H_
