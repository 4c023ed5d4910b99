#pragma once
// Small single-threaded GEMM for attention's tile products (called inside our
// OpenMP tasks). oneDNN's sgemm reaches only 60-75 % of a core on these shapes
// (k = 64..256, packing A and B on every call); this register-blocked AVX-512
// kernel needs no packing because attention lays B out row-contiguous (K and V
// are pre-transposed once per call where needed).
//   C (m, n) = alpha · A (m, k) · B (k, n) + (accumulate ? C : 0)
//   A element (i, p) at a[i·a_row + p·a_col] (a_col = 1: row-major A; a_row = 1: Aᵀ given)
//   B row p at b + p·ldb (contiguous); C row i at c + i·ldc.
// Without AVX-512 it falls back to oneDNN (cpu::matmul).
#include <algorithm>
#include <cstdint>

#include "kernels/matmul.h"

#if defined(__AVX512F__) && !defined(LOWBAND_ATT_USE_ONEDNN)
#include <immintrin.h>
#endif

namespace lowband::kernels::cpu::detail {

#if defined(__AVX512F__) && !defined(LOWBAND_ATT_USE_ONEDNN)
constexpr int kRowsPerBlock = 6;      // 6 x 4 zmm accumulators + 4 B registers of 32
constexpr int kVectorsPerBlock = 4;   // 64 columns
constexpr int64_t kDepthBlock = 128;  // a 128 x 64 B panel (32 KiB) stays in L1

template <int MR, int NV>
inline void gemm_block(int64_t k, float alpha, const float* a, int64_t a_row, int64_t a_col,
                       const float* b, int64_t ldb, float* c, int64_t ldc, __mmask16 last,
                       bool accumulate) {
  __m512 acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[NV];
    const float* bp = b + p * ldb;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, bp + 16 * v) : _mm512_loadu_ps(bp + 16 * v);
    const float* ap = a + p * a_col;
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_set1_ps(ap[i * a_row]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
  }
  const __m512 al = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const __mmask16 mk = v == NV - 1 ? last : __mmask16(0xFFFF);
      float* cp = c + i * ldc + 16 * v;
      __m512 r = _mm512_mul_ps(al, acc[i][v]);
      if (accumulate) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk, cp));
      _mm512_mask_storeu_ps(cp, mk, r);
    }
}

using BlockFn = void (*)(int64_t, float, const float*, int64_t, int64_t, const float*, int64_t,
                         float*, int64_t, __mmask16, bool);

template <int MR>
inline BlockFn pick_block(int nv) {
  switch (nv) {
    case 1: return gemm_block<MR, 1>;
    case 2: return gemm_block<MR, 2>;
    case 3: return gemm_block<MR, 3>;
    default: return gemm_block<MR, 4>;
  }
}

inline BlockFn pick_block(int mr, int nv) {
  switch (mr) {
    case 1: return pick_block<1>(nv);
    case 2: return pick_block<2>(nv);
    case 3: return pick_block<3>(nv);
    case 4: return pick_block<4>(nv);
    case 5: return pick_block<5>(nv);
    default: return pick_block<6>(nv);
  }
}
#endif

inline void tile_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_row,
                      int64_t a_col, const float* b, int64_t ldb, bool accumulate, float* c,
                      int64_t ldc) {
  if (m <= 0 || n <= 0) return;
#if defined(__AVX512F__) && !defined(LOWBAND_ATT_USE_ONEDNN)
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  for (int64_t j0 = 0; j0 < n; j0 += 16 * kVectorsPerBlock) {
    const int64_t nb = std::min<int64_t>(16 * kVectorsPerBlock, n - j0);
    const int nv = int((nb + 15) / 16);
    const int64_t tail = nb - 16 * (nv - 1);
    const __mmask16 last = tail == 16 ? __mmask16(0xFFFF) : __mmask16((1u << tail) - 1u);
    for (int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
      const int64_t kb = std::min(kDepthBlock, k - p0);
      const bool acc = accumulate || p0 > 0;
      for (int64_t i0 = 0; i0 < m; i0 += kRowsPerBlock) {
        const int mr = int(std::min<int64_t>(kRowsPerBlock, m - i0));
        pick_block(mr, nv)(kb, alpha, a + i0 * a_row + p0 * a_col, a_row, a_col, b + p0 * ldb + j0,
                           ldb, c + i0 * ldc + j0, ldc, last, acc);
      }
    }
  }
#else
  const bool a_trans = a_col != 1;
  matmul(a_trans ? Trans::yes : Trans::no, Trans::no, m, n, k, alpha, a, a_trans ? a_col : a_row,
         b, ldb, accumulate ? 1.0f : 0.0f, c, ldc);
#endif
}

// dst (cols, rows) = src (rows, cols)ᵀ with row strides ld_src, ld_dst; 16 x 16
// blocks keep both sides in cache.
inline void transpose(int64_t rows, int64_t cols, const float* src, int64_t ld_src, float* dst,
                      int64_t ld_dst) {
  for (int64_t i0 = 0; i0 < rows; i0 += 16)
    for (int64_t j0 = 0; j0 < cols; j0 += 16)
      for (int64_t j = j0; j < std::min(cols, j0 + 16); ++j)
        for (int64_t i = i0; i < std::min(rows, i0 + 16); ++i) dst[j * ld_dst + i] = src[i * ld_src + j];
}

}  // namespace lowband::kernels::cpu::detail
