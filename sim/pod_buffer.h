#pragma once
// A growable array of trivially copyable values that grows with realloc. For the
// step graph's arrays (at 512 context ranks 250 MB of task records): glibc
// moves a large block by remapping its pages (mremap), where std::vector would
// allocate the doubled block and copy, holding old and new at once.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace lowband::sim {

template <class T>
class PodBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "PodBuffer holds trivially copyable values");

 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;

  PodBuffer() = default;
  PodBuffer(const PodBuffer& o) { assign(o.begin(), o.end()); }
  PodBuffer(PodBuffer&& o) noexcept { swap(o); }
  PodBuffer& operator=(const PodBuffer& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  PodBuffer& operator=(PodBuffer&& o) noexcept {
    PodBuffer moved(std::move(o));
    swap(moved);
    return *this;
  }
  ~PodBuffer() { std::free(data_); }

  void swap(PodBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* data() const { return data_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& operator[](size_t i) { return data_[i]; }
  const T& back() const { return data_[size_ - 1]; }

  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > capacity_) reallocate(n);
  }
  void push_back(const T& value) {
    if (size_ == capacity_) reallocate(std::max<size_t>(16, capacity_ * 2));
    data_[size_++] = value;
  }
  // Appends [first, last), which must not lie in this buffer.
  void append(const T* first, const T* last) {
    const size_t n = static_cast<size_t>(last - first);
    if (n == 0) return;
    if (size_ + n > capacity_) reallocate(std::max(size_ + n, capacity_ * 2));
    std::memcpy(data_ + size_, first, n * sizeof(T));
    size_ += n;
  }

 private:
  void assign(const T* first, const T* last) {
    size_ = 0;
    append(first, last);
  }
  void reallocate(size_t n) {
    void* p = std::realloc(data_, n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    capacity_ = n;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace lowband::sim
