#pragma once
// Branch-free float math that GCC/Clang auto-vectorise inside `#pragma omp simd`
// loops (glibc's expf is a scalar call unless -ffast-math, which we avoid because
// it also breaks NaN checks). Internal to kernels/cpu.
//
// exp_f32 is the one exp of the CPU kernels: the range reduction and Cephes
// polynomial are written once (exp_reduced), wrapped for a float (dense ops:
// swiglu, cross-entropy; auto-vectorised) and, under AVX-512, for a __m512 of
// 16 floats (the online softmax, softmax_simd.h).
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace lowband::kernels::cpu::detail {

// Input range of the core: below, e^x is 0 in float (denormals aside); above,
// the wrappers clamp (2^n must stay a normal float).
inline constexpr float kExpLowest = -87.3f, kExpHighest = 88.3f;

// e^x = p · 2^n for x in [kExpLowest, kExpHighest]: returns p, sets n (an
// integer-valued float). F is float or a GCC vector of floats (__m512).
template <typename F>
__attribute__((always_inline)) inline F exp_reduced(F x, F& n) {
  // x = n ln2 + r with |r| <= ln2/2; ln2 split in two so n*ln2_hi is exact.
  // Round to nearest with the 1.5*2^23 trick: floorf does not vectorise under
  // the default -ftrapping-math.
  n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  F r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // Cephes expf polynomial for e^r on [-ln2/2, ln2/2]; relative error ~2e-7.
  F p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

// e^x for a float, relative error about 2e-7 (a couple of ulp) where the result
// is a normal float; x < -87.3 (and -inf) gives exactly 0, x > 88.3 gives e^88.3
// (finite), NaN stays NaN.
__attribute__((always_inline)) inline float exp_f32(float x) {
  const float in = x;
  x = x < kExpHighest ? x : kExpHighest;
  x = x > kExpLowest ? x : kExpLowest;  // NaN becomes kExpLowest; restored below
  float n;
  const float p = exp_reduced(x, n);
  // 2^n from the exponent bits; the clamp keeps n in [-126, 127].
  const float result = p * __builtin_bit_cast(float, (static_cast<int32_t>(n) + 127) << 23);
  const float tail = in < kExpLowest ? 0.0f : result;
  return in == in ? tail : in;
}

#if defined(__AVX512F__)
// The same on 16 lanes (same core, same edges). min/max keep a NaN lane NaN
// (they return their second operand when one is NaN), so no separate restore.
__attribute__((always_inline)) inline __m512 exp_f32(__m512 x) {
  const __m512 lo = _mm512_set1_ps(kExpLowest);
  const __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ);  // x >= lo, or NaN
  // maskz forms with a full mask: the plain ones trip GCC 12's false
  // -Wuninitialized (an undefined pass-through operand inside the intrinsic).
  const __mmask16 all = 0xFFFF;
  x = _mm512_maskz_max_ps(all, lo, _mm512_maskz_min_ps(all, _mm512_set1_ps(kExpHighest), x));
  __m512 n;
  const __m512 p = exp_reduced(x, n);
  return _mm512_maskz_scalef_ps(keep, p, n);  // p · 2^n, 0 where x < lo
}
#endif

// Logistic sigmoid 1 / (1 + e^-x), vectorisable.
__attribute__((always_inline)) inline float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

// sin and cos of a double angle with |angle| < 2^30, branch-free so a loop of
// them vectorises (std::sin/std::cos are scalar calls and dominated RoPE's time).
// Cody-Waite reduction by pi/2 in three parts (exact products for |k| < 2^20,
// error ~1e-16 * |k| beyond), then fdlibm's sin/cos kernels on [-pi/4, pi/4]:
// absolute error about 1e-15 near 0 and ~1e-12 at angle 1e6, far below fp32.
__attribute__((always_inline)) inline void sincos_f64(double angle, double& sin_out,
                                                      double& cos_out) {
  // k = nearest integer to angle / (pi/2), via the 1.5*2^52 rounding trick.
  const double kd = (angle * 6.36619772367581382433e-01 + 6755399441055744.0) - 6755399441055744.0;
  double r = angle - kd * 1.57079632673412561417e+00;
  r = r - kd * 6.07710050630396597660e-11;
  r = r - kd * 2.02226624879595063154e-21;
  const double z = r * r;
  const double sin_r =
      r + r * z *
              (-1.66666666666666324348e-01 +
               z * (8.33333333332248946124e-03 +
                    z * (-1.98412698298579493134e-04 +
                         z * (2.75573137070700676789e-06 +
                              z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
  const double cos_r =
      1.0 - 0.5 * z +
      z * z *
          (4.16666666666666019037e-02 +
           z * (-1.38888888888741095749e-03 +
                z * (2.48015872894767294178e-05 +
                     z * (-2.75573143513906633035e-07 +
                          z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  // Quadrant q = k mod 4: (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s).
  const int64_t q = static_cast<int64_t>(kd) & 3;
  const double s_pick = (q & 1) ? cos_r : sin_r;
  const double c_pick = (q & 1) ? sin_r : cos_r;
  sin_out = (q & 2) ? -s_pick : s_pick;
  cos_out = ((q + 1) & 2) ? -c_pick : c_pick;
}

}  // namespace lowband::kernels::cpu::detail
