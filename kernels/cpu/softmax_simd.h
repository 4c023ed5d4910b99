#pragma once
// Vectorised row primitives for the online softmax in cpu/attention.cpp.
// AVX-512 when compiled for it (the default -march=native build here), else
// plain loops. Either way the exp is vec_math.h's exp_f32 (Cephes' expf
// polynomial, relative error about 2e-7; inputs below -87.3 and -inf give
// exactly 0), on 16 lanes at a time here with masked row tails.
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/vec_math.h"

#if defined(__AVX512F__)
#include <immintrin.h>
// GCC 12 warns falsely about _mm512_undefined_ps() inside its own intrinsics
// once they are inlined; the warning is not about our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace lowband::kernels::cpu::detail {

#if defined(__AVX512F__)
// Horizontal reductions through memory: GCC 12's _mm512_reduce_* trip a false
// -Wmaybe-uninitialized, and these run once per row, not per element.
inline float hmax(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float m = t[0];
  for (int i = 1; i < 16; ++i) m = t[i] > m ? t[i] : m;  // a NaN score still reaches out via exp
  return m;
}
inline float hsum(__m512 v) {
  alignas(64) float t[16];
  _mm512_store_ps(t, v);
  float s = 0.0f;
  for (int i = 0; i < 16; ++i) s += t[i];
  return s;
}

inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1u);
}
#endif

// max over x[0, n); -inf when n == 0.
inline float row_max(const float* x, int64_t n) {
#if defined(__AVX512F__)
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 acc = neg_inf;
  for (int64_t j = 0; j < n; j += 16)
    acc = _mm512_max_ps(acc, _mm512_mask_loadu_ps(neg_inf, tail_mask(n - j), x + j));
  return hmax(acc);
#else
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::fmax(m, x[j]);
  return m;
#endif
}

// x[j] = exp(x[j] - shift) for j < n; returns the sum of the new values.
inline float exp_shift_sum(float* x, int64_t n, float shift) {
#if defined(__AVX512F__)
  const __m512 s = _mm512_set1_ps(shift);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 mk = tail_mask(n - j);
    const __m512 e = exp_f32(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + j), s));
    _mm512_mask_storeu_ps(x + j, mk, e);
    acc = _mm512_mask_add_ps(acc, mk, acc, e);
  }
  return hsum(acc);
#else
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = exp_f32(x[j] - shift);
    sum += x[j];
  }
  return sum;
#endif
}

// x[j] = exp(x[j] - shift) for j < n.
inline void exp_shift(float* x, int64_t n, float shift) {
#if defined(__AVX512F__)
  const __m512 s = _mm512_set1_ps(shift);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 mk = tail_mask(n - j);
    _mm512_mask_storeu_ps(x + j, mk, exp_f32(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + j), s)));
  }
#else
  for (int64_t j = 0; j < n; ++j) x[j] = exp_f32(x[j] - shift);
#endif
}

}  // namespace lowband::kernels::cpu::detail
