// Size checks and the double-precision Jacobi eigensolver shared by the CPU and
// CUDA subspace ops.
#include "kernels/subspace.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "common/error.h"

namespace lowband::kernels {

void check_subspace(const Subspace& s, int64_t n, const char* where) {
  const std::string w(where);
  if (s.d <= 0) throw InputError(w + ".d", "must be > 0, got " + std::to_string(s.d));
  if (s.r <= 0 || s.r > s.d)
    throw InputError(w + ".r",
                     "must be in [1, d = " + std::to_string(s.d) + "], got " + std::to_string(s.r));
  if (n < 0) throw InputError(w + ".n", "must be >= 0, got " + std::to_string(n));
  if (!s.u0 || !s.au0 || !s.a2u0) throw InputError(w + ".u0", "U₀, AU₀ and A²U₀ must be given");
}

namespace detail {

void symmetric_eigen_jacobi(int64_t d, double* a, double* values, double* vectors) {
  std::vector<double> v(d * d, 0.0);
  for (int64_t i = 0; i < d; ++i) v[i * d + i] = 1.0;
  auto off_norm2 = [&] {
    double off = 0.0;
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < d; ++j)
        if (i != j) off += a[i * d + j] * a[i * d + j];
    return off;
  };
  double total = 0.0;
  for (int64_t i = 0; i < d * d; ++i) total += a[i] * a[i];
  // Cyclic sweeps converge quadratically; 60 is far more than d <= 512 needs.
  for (int sweep = 0; sweep < 60 && off_norm2() > 1e-30 * total; ++sweep) {
    for (int64_t p = 0; p < d - 1; ++p) {
      for (int64_t q = p + 1; q < d; ++q) {
        const double apq = a[p * d + q];
        if (std::abs(apq) <= 1e-300) continue;
        // Rotation that zeroes a[p][q] (Numerical Recipes §11.1 conventions).
        const double theta = (a[q * d + q] - a[p * d + p]) / (2.0 * apq);
        const double t =
            (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (int64_t k = 0; k < d; ++k) {  // columns p, q
          const double akp = a[k * d + p], akq = a[k * d + q];
          a[k * d + p] = c * akp - s * akq;
          a[k * d + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < d; ++k) {  // rows p, q
          const double apk = a[p * d + k], aqk = a[q * d + k];
          a[p * d + k] = c * apk - s * aqk;
          a[q * d + k] = s * apk + c * aqk;
        }
        a[p * d + q] = a[q * d + p] = 0.0;
        for (int64_t k = 0; k < d; ++k) {
          const double vkp = v[k * d + p], vkq = v[k * d + q];
          v[k * d + p] = c * vkp - s * vkq;
          v[k * d + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  std::vector<int64_t> order(d);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return a[x * d + x] > a[y * d + y]; });
  for (int64_t c = 0; c < d; ++c) {
    values[c] = a[order[c] * d + order[c]];
    for (int64_t k = 0; k < d; ++k) vectors[k * d + c] = v[k * d + order[c]];
  }
}

void top_eigenvectors(int64_t d, int64_t r, const float* gram, float* u0, float* eigenvalues) {
  std::vector<double> a(d * d), values(d), vectors(d * d);
  for (int64_t i = 0; i < d; ++i)  // symmetrise away the GEMM's rounding asymmetry
    for (int64_t j = 0; j < d; ++j)
      a[i * d + j] = 0.5 * (double(gram[i * d + j]) + gram[j * d + i]);
  symmetric_eigen_jacobi(d, a.data(), values.data(), vectors.data());
  for (int64_t c = 0; c < r; ++c) {
    int64_t arg = 0;
    for (int64_t k = 1; k < d; ++k)
      if (std::abs(vectors[k * d + c]) > std::abs(vectors[arg * d + c])) arg = k;
    const double sign = vectors[arg * d + c] < 0 ? -1.0 : 1.0;
    for (int64_t k = 0; k < d; ++k) u0[k * r + c] = float(sign * vectors[k * d + c]);
    if (eigenvalues) eigenvalues[c] = float(values[c]);
  }
}

}  // namespace detail
}  // namespace lowband::kernels
