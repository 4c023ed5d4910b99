#pragma once
// Tile products and buffers for cpu/attention.cpp. The products run in oneDNN's
// sgemm (cpu::matmul), single-threaded inside our OpenMP tasks. A hand-written
// AVX-512 6x64 register-blocked kernel was measured against it on the same
// tiles and was no faster (slower at head_dim 128), see kernels/README.md; what
// did matter was feeding the GEMM 64-byte aligned, per-head contiguous rows.
//   C (m, n) = alpha · A (m, k) · B (k, n) + (accumulate ? C : 0)
//   A element (i, p) at a[i·a_row + p·a_col]: a_col = 1 is row-major A with
//   lda = a_row; a_row = 1 is Aᵀ stored (k, m) with lda = a_col.
//   B row p at b + p·ldb; C row i at c + i·ldc.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#include "kernels/matmul.h"

namespace lowband::kernels::cpu::detail {

// A 64-byte aligned float array, so that vector loads of rows whose stride is a
// multiple of 16 floats never straddle two cache lines. Not initialised.
struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], FreeDeleter>;
inline AlignedFloats aligned_floats(size_t count) {
  const size_t bytes = (std::max<size_t>(count, 1) * sizeof(float) + 63) / 64 * 64;
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) throw std::bad_alloc();
  return AlignedFloats(p);
}

// Row stride for a tile of `cols` floats: a whole number of cache lines.
inline int64_t padded_ld(int64_t cols) { return (cols + 15) / 16 * 16; }

inline void tile_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_row,
                      int64_t a_col, const float* b, int64_t ldb, bool accumulate, float* c,
                      int64_t ldc) {
  const bool a_trans = a_col != 1;
  matmul(a_trans ? Trans::yes : Trans::no, Trans::no, m, n, k, alpha, a, a_trans ? a_col : a_row, b,
         ldb, accumulate ? 1.0f : 0.0f, c, ldc);
}

// dst (cols, rows) = src (rows, cols)ᵀ with row strides ld_src, ld_dst; 16 x 16
// blocks keep both sides in cache.
inline void transpose(int64_t rows, int64_t cols, const float* src, int64_t ld_src, float* dst,
                      int64_t ld_dst) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16)
      for (int64_t j = j0; j < std::min(cols, j0 + 16); ++j)
        for (int64_t i = i0; i < std::min(rows, i0 + 16); ++i)
          dst[j * ld_dst + i] = src[i * ld_src + j];
}

}  // namespace lowband::kernels::cpu::detail
