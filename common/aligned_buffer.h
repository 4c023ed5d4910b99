#pragma once
// std::vector with 64-byte (cache-line) aligned storage, for the flat float
// buffers the kernels stream through: parameters, gradients, optimiser moments,
// activations. glibc's malloc returns 16-byte aligned blocks (large ones sit 16
// bytes past a page boundary), so every 64-byte AVX-512 load of such a buffer
// straddles two cache lines; oneDNN's sgemm ran 5-15 % slower on them
// (kernels/README.md, "Aligned buffers").
//   lowband::AlignedVector<float> x(n);   // x.data() % 64 == 0
#include <cstddef>
#include <new>
#include <vector>

namespace lowband {

inline constexpr std::size_t kCacheLineBytes = 64;

template <typename T, std::size_t Alignment = kCacheLineBytes>
struct AlignedAllocator {
  static_assert(Alignment >= alignof(T) && (Alignment & (Alignment - 1)) == 0,
                "alignment must be a power of two no smaller than the type's");
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = AlignedAllocator<U, Alignment>;
  };

  AlignedAllocator() noexcept = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U, Alignment>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(Alignment)));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t(Alignment)); }

  template <typename U>
  bool operator==(const AlignedAllocator<U, Alignment>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const AlignedAllocator<U, Alignment>&) const noexcept { return false; }
};

template <typename T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

}  // namespace lowband
