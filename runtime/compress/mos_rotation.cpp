#include "runtime/compress/mos_rotation.h"

#include <algorithm>

#include "kernels/matmul.h"

namespace lowband::compress::mos {

using kernels::Trans;

void rotation_products(int64_t d, int64_t r, int m, const float* a, const float* u0, float* au0, float* aau0) {
  const size_t dr = size_t(d * r), dd = size_t(d * d);
  for (int j = 0; j < m; ++j)
    kernels::cpu::matmul(Trans::no, Trans::no, d, r, d, 1.0f, a + j * dd, d, u0, r, 0.0f, au0 + j * dr, r);
  for (int j = 0; j < m; ++j)
    for (int k = 0; k < m; ++k)
      kernels::cpu::matmul(Trans::no, Trans::no, d, r, d, 1.0f, a + j * dd, d, au0 + k * dr, r, 0.0f,
                           aau0 + (size_t(j) * m + k) * dr, r);
}

void rotated_basis(const Rotation& rot, const float* theta, float* u) {
  const size_t dr = size_t(rot.d * rot.r);
  for (size_t e = 0; e < dr; ++e) {
    double x = rot.u0[e];
    for (int j = 0; j < rot.m; ++j) {
      x += double(theta[j]) * rot.au0[j * dr + e];
      for (int k = 0; k < rot.m; ++k) x += 0.5 * double(theta[j]) * theta[k] * rot.aau0[(size_t(j) * rot.m + k) * dr + e];
    }
    u[e] = float(x);
  }
}

void rotation_theta_gradient(const Rotation& rot, const float* theta, const float* g, float* dtheta) {
  const size_t dr = size_t(rot.d * rot.r);
  const auto dot = [&](const float* x) {
    double s = 0;
    for (size_t e = 0; e < dr; ++e) s += double(g[e]) * x[e];
    return s;
  };
  for (int j = 0; j < rot.m; ++j) {
    double s = dot(rot.au0 + j * dr);
    for (int k = 0; k < rot.m; ++k)
      s += 0.5 * double(theta[k]) *
           (dot(rot.aau0 + (size_t(j) * rot.m + k) * dr) + dot(rot.aau0 + (size_t(k) * rot.m + j) * dr));
    dtheta[j] = float(s);
  }
}

void project(int64_t n, int64_t d, int64_t r, const float* z, const float* u, float* c) {
  kernels::cpu::matmul(Trans::no, Trans::no, n, r, d, 1.0f, z, d, u, r, 0.0f, c, r);
}

void reconstruct(int64_t n, int64_t d, int64_t r, const float* c, const float* u, float* z_hat) {
  kernels::cpu::matmul(Trans::no, Trans::yes, n, d, r, 1.0f, c, r, u, r, 0.0f, z_hat, d);
}

void outer_sum(int64_t n, int64_t d, int64_t r, const float* a, const float* b, float* g) {
  kernels::cpu::matmul(Trans::yes, Trans::no, d, r, n, 1.0f, a, d, b, r, 0.0f, g, r);
}

}  // namespace lowband::compress::mos
