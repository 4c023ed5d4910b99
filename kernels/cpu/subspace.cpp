// Subspace projection on the CPU: U(θ) is formed once per call (d·r, small)
// and every product runs in oneDNN's sgemm.
#include "kernels/subspace.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "kernels/matmul.h"

namespace lowband::kernels::cpu {
namespace {

std::vector<float> basis_of(const Subspace& s, float theta) {
  std::vector<float> u(s.d * s.r);
  subspace_basis(s, theta, u.data());
  return u;
}

// ⟨G, AU₀ + θ·A²U₀⟩ with G (d, r) = Xᵀ·Y for X (n, d), Y (n, r); accumulated in double.
float theta_gradient(const Subspace& s, float theta, int64_t n, const float* x, const float* y) {
  if (n == 0) return 0.0f;
  std::vector<float> g(s.d * s.r);
  matmul(Trans::yes, Trans::no, s.d, s.r, n, 1.0f, x, s.d, y, s.r, 0.0f, g.data(), s.r);
  double sum = 0.0;
  for (int64_t e = 0; e < s.d * s.r; ++e)
    sum += double(g[e]) * (double(s.au0[e]) + double(theta) * double(s.a2u0[e]));
  return float(sum);
}

}  // namespace

void subspace_generator_products(int64_t d, int64_t r, const float* a, const float* u0, float* au0,
                                 float* a2u0) {
  if (d <= 0 || r <= 0 || r > d)
    throw InputError("subspace_generator_products.r", "need 1 <= r <= d");
  matmul(Trans::no, Trans::no, d, r, d, 1.0f, a, d, u0, r, 0.0f, au0, r);
  matmul(Trans::no, Trans::no, d, r, d, 1.0f, a, d, au0, r, 0.0f, a2u0, r);
}

void subspace_basis(const Subspace& s, float theta, float* u) {
  check_subspace(s, 0, "subspace_basis");
  const float half_t2 = 0.5f * theta * theta;
#pragma omp simd
  for (int64_t e = 0; e < s.d * s.r; ++e) u[e] = s.u0[e] + theta * s.au0[e] + half_t2 * s.a2u0[e];
}

void subspace_project(const Subspace& s, float theta, int64_t n, const float* z, float* c) {
  check_subspace(s, n, "subspace_project");
  const auto u = basis_of(s, theta);
  matmul(Trans::no, Trans::no, n, s.r, s.d, 1.0f, z, s.d, u.data(), s.r, 0.0f, c, s.r);
}

void subspace_reconstruct(const Subspace& s, float theta, int64_t n, const float* c, float* z_hat) {
  check_subspace(s, n, "subspace_reconstruct");
  const auto u = basis_of(s, theta);
  matmul(Trans::no, Trans::yes, n, s.d, s.r, 1.0f, c, s.r, u.data(), s.r, 0.0f, z_hat, s.d);
}

float subspace_project_backward(const Subspace& s, float theta, int64_t n, const float* z,
                                const float* dc, float* dz) {
  check_subspace(s, n, "subspace_project_backward");
  const auto u = basis_of(s, theta);
  matmul(Trans::no, Trans::yes, n, s.d, s.r, 1.0f, dc, s.r, u.data(), s.r, 0.0f, dz, s.d);
  return theta_gradient(s, theta, n, z, dc);
}

float subspace_reconstruct_backward(const Subspace& s, float theta, int64_t n, const float* c,
                                    const float* dz_hat, float* dc) {
  check_subspace(s, n, "subspace_reconstruct_backward");
  const auto u = basis_of(s, theta);
  matmul(Trans::no, Trans::no, n, s.r, s.d, 1.0f, dz_hat, s.d, u.data(), s.r, 0.0f, dc, s.r);
  return theta_gradient(s, theta, n, dz_hat, c);
}

void principal_directions(int64_t n, int64_t d, int64_t r, const float* z, bool center, float* u0,
                          float* eigenvalues) {
  if (n < 0) throw InputError("principal_directions.n", "must be >= 0");
  if (d <= 0 || r <= 0 || r > d) throw InputError("principal_directions.r", "need 1 <= r <= d");
  std::vector<float> centred;
  if (center && n > 0) {
    std::vector<double> mean(d, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j) mean[j] += z[i * d + j];
    for (auto& m : mean) m /= double(n);
    centred.resize(n * d);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j) centred[i * d + j] = float(z[i * d + j] - mean[j]);
    z = centred.data();
  }
  std::vector<float> gram(d * d, 0.0f);
  if (n > 0) matmul(Trans::yes, Trans::no, d, d, n, 1.0f, z, d, z, d, 0.0f, gram.data(), d);
  kernels::detail::top_eigenvectors(d, r, gram.data(), u0, eigenvalues);
}

}  // namespace lowband::kernels::cpu
