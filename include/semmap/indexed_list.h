// IndexedList: a random-access range of values made on access, item i by
// At(source, i): Graph::nodes() (NodeList, graph.h) and
// SemanticMapper::mapAll() (MappingList, mapper.h) hand out Nodes and
// Mappings this way, assembled from compact records.
//
//   for (const semmap::Node& n : graph.nodes()) { ... }
//   semmap::Mapping m = mapper.mapAll()[i];
//
// `for`, `list[i]`, `list.size()` and the standard algorithms that read work
// as on a container. Dereferencing gives a value, as proxy iterators do:
// meaningless for algorithms that write. A list and its iterators are
// valid while what made them lives (see graph.h and mapper.h); they are
// cheap to copy, and safe to read from any number of threads.
#ifndef SEMMAP_INCLUDE_SEMMAP_INDEXED_LIST_H_
#define SEMMAP_INCLUDE_SEMMAP_INDEXED_LIST_H_

#include <cstddef>
#include <iterator>

namespace semmap {

template <typename Source, typename Value, Value (*At)(const Source*, std::ptrdiff_t)>
class IndexedList {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Value;
    using difference_type = std::ptrdiff_t;
    using reference = Value;
    struct pointer {
      Value value;
      const Value* operator->() const { return &value; }
    };

    const_iterator() = default;

    Value operator*() const { return At(source_, index_); }
    pointer operator->() const { return pointer{**this}; }
    Value operator[](difference_type n) const { return *(*this + n); }

    const_iterator& operator++() { ++index_; return *this; }
    const_iterator operator++(int) { const_iterator old = *this; ++index_; return old; }
    const_iterator& operator--() { --index_; return *this; }
    const_iterator operator--(int) { const_iterator old = *this; --index_; return old; }
    const_iterator& operator+=(difference_type n) { index_ += n; return *this; }
    const_iterator& operator-=(difference_type n) { index_ -= n; return *this; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return a.index_ - b.index_;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) {
      return a.index_ == b.index_;
    }
    friend bool operator!=(const const_iterator& a, const const_iterator& b) { return !(a == b); }
    friend bool operator<(const const_iterator& a, const const_iterator& b) {
      return a.index_ < b.index_;
    }
    friend bool operator>(const const_iterator& a, const const_iterator& b) { return b < a; }
    friend bool operator<=(const const_iterator& a, const const_iterator& b) { return !(b < a); }
    friend bool operator>=(const const_iterator& a, const const_iterator& b) { return !(a < b); }

   private:
    friend class IndexedList;
    const_iterator(const Source* source, std::ptrdiff_t index) : source_(source), index_(index) {}
    const Source* source_ = nullptr;
    std::ptrdiff_t index_ = 0;
  };
  using iterator = const_iterator;
  using value_type = Value;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = Value;

  IndexedList() = default;
  // The `size` items of `source`: made by Graph::nodes() and
  // SemanticMapper::mapAll().
  IndexedList(const Source* source, std::size_t size) : source_(source), size_(size) {}

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Item `i`, i < size().
  Value operator[](std::size_t i) const { return At(source_, static_cast<std::ptrdiff_t>(i)); }
  const_iterator begin() const { return const_iterator(source_, 0); }
  const_iterator end() const {
    return const_iterator(source_, static_cast<std::ptrdiff_t>(size_));
  }

 private:
  const Source* source_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace semmap

#endif  // SEMMAP_INCLUDE_SEMMAP_INDEXED_LIST_H_
