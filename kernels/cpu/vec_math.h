#pragma once
// Branch-free float math that GCC/Clang auto-vectorise inside `#pragma omp simd`
// loops (glibc's expf is a scalar call unless -ffast-math, which we avoid because
// it also breaks NaN checks). Internal to kernels/cpu.
#include <cstdint>

namespace lowband::kernels::cpu::detail {

// e^x for float x, relative error about 2e-7 (a couple of ulp) over the whole
// range where the result is a normal float; inputs are clamped to
// [-87.3, 88.3], so very negative x give ~1e-38 instead of 0 (harmless for
// softmax and sigmoid, whose callers never need more), x > 88.3 gives e^88.3,
// and NaN stays NaN.
__attribute__((always_inline)) inline float exp_f32(float x) {
  const float nan_guard = x;
  x = x < 88.3f ? x : 88.3f;
  x = x > -87.3f ? x : -87.3f;
  // x = n ln2 + r with |r| <= ln2/2; ln2 split in two so n*ln2_hi is exact.
  // Round to nearest with the 1.5*2^23 trick: floorf does not vectorise under
  // the default -ftrapping-math.
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // Cephes expf polynomial for e^r on [-ln2/2, ln2/2].
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n from the exponent bits; the clamp keeps n in [-126, 127].
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  const float scale = __builtin_bit_cast(float, bits);
  const float result = p * scale;
  return nan_guard == nan_guard ? result : nan_guard;
}

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
