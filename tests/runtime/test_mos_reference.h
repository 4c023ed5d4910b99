#pragma once
// Float64 reimplementation of the MoS codec's map for one block, for the tests:
//   θ_h = ψ_h·mean(Z_h) + b_h,  U = U₀ + θ·AU₀ + ½θ²·A²U₀,  Ẑ_h = Z_h·U·Uᵀ
// given the codec's own U₀, AU₀, A²U₀ (the map, not the fitting, is under test).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/compress/mos_codec.h"

namespace lowband::compress::test {

struct HeadBasis {
  std::vector<double> u0, au0, a2u0;  // (d, r)
};

inline HeadBasis head_basis(const MosCodec& codec, int layer, KvTensor t, int h) {
  const auto& a = codec.u0(layer, t, h);
  const auto& b = codec.au0(layer, t, h);
  const auto& c = codec.a2u0(layer, t, h);
  return {std::vector<double>(a.begin(), a.end()), std::vector<double>(b.begin(), b.end()),
          std::vector<double>(c.begin(), c.end())};
}

// Head h of every row of a (n, H, d) block projected on U (d, r) and back: Ẑ = Z·U·Uᵀ.
inline void project_reconstruct(const std::vector<double>& u, int64_t n, int H, int d, int r, int h,
                                const std::vector<double>& z, std::vector<double>& out) {
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> c(r, 0.0);
    for (int k = 0; k < r; ++k)
      for (int e = 0; e < d; ++e) c[k] += z[(i * H + h) * d + e] * u[e * r + k];
    for (int e = 0; e < d; ++e)
      for (int k = 0; k < r; ++k) out[(i * H + h) * d + e] += c[k] * u[e * r + k];
  }
}

// Ẑ of a whole (n, H, d) block in float64. psi_b: per head d + 1 values (ψ then b),
// or empty for θ = theta_fixed on every head.
inline std::vector<double> mos_reference(const std::vector<HeadBasis>& bases, int64_t n, int H, int d, int r,
                                         const std::vector<double>& z, const std::vector<double>& psi_b,
                                         double theta_fixed = 0.0) {
  std::vector<double> out(z.size(), 0.0);
  for (int h = 0; h < H; ++h) {
    double theta = theta_fixed;
    if (!psi_b.empty()) {
      theta = psi_b[h * (d + 1) + d];
      for (int e = 0; e < d; ++e) {
        double mean = 0;
        for (int64_t i = 0; i < n; ++i) mean += z[(i * H + h) * d + e];
        theta += psi_b[h * (d + 1) + e] * mean / double(n);
      }
    }
    const HeadBasis& b = bases[h];
    std::vector<double> u(d * r);
    for (int e = 0; e < d * r; ++e) u[e] = b.u0[e] + theta * b.au0[e] + 0.5 * theta * theta * b.a2u0[e];
    project_reconstruct(u, n, H, d, r, h, z, out);
  }
  return out;
}

// The same with m generators (compression.rotation_params): per head m·(d + 1)
// values of psi_b (ψⱼ then bⱼ), bases' au0 holding Aⱼ·U₀ (m × (d, r)) and a2u0
// Aⱼ·Aₖ·U₀ (m·m × (d, r), at j·m + k):  U = U₀ + Σⱼ θⱼAⱼU₀ + ½ Σⱼₖ θⱼθₖ AⱼAₖU₀.
inline std::vector<double> mos_reference_m(const std::vector<HeadBasis>& bases, int64_t n, int H, int d, int r, int m,
                                           const std::vector<double>& z, const std::vector<double>& psi_b) {
  std::vector<double> out(z.size(), 0.0);
  const size_t dr = size_t(d) * r;
  for (int h = 0; h < H; ++h) {
    std::vector<double> theta(m);
    for (int j = 0; j < m; ++j) {
      const double* q = psi_b.data() + (size_t(h) * m + j) * (d + 1);
      theta[j] = q[d];
      for (int e = 0; e < d; ++e) {
        double mean = 0;
        for (int64_t i = 0; i < n; ++i) mean += z[(i * H + h) * d + e];
        theta[j] += q[e] * mean / double(n);
      }
    }
    const HeadBasis& b = bases[h];
    std::vector<double> u(b.u0);
    for (size_t e = 0; e < dr; ++e)
      for (int j = 0; j < m; ++j) {
        u[e] += theta[j] * b.au0[j * dr + e];
        for (int k = 0; k < m; ++k) u[e] += 0.5 * theta[j] * theta[k] * b.a2u0[(size_t(j) * m + k) * dr + e];
      }
    project_reconstruct(u, n, H, d, r, h, z, out);
  }
  return out;
}

// Llama rotate-half RoPE of a (n, H, d) block in float64 (kernels/rope.h);
// sign = -1 applies the inverse rotation.
inline std::vector<double> rope(const std::vector<double>& x, const int64_t* positions, int64_t n, int H, int d,
                                double sign, double base = 10000.0) {
  std::vector<double> out(x.size());
  const int half = d / 2;
  for (int64_t t = 0; t < n; ++t)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < half; ++i) {
        const double angle = sign * double(positions[t]) * std::pow(base, -2.0 * i / d);
        const double a = x[(t * H + h) * d + i], b = x[(t * H + h) * d + i + half];
        out[(t * H + h) * d + i] = a * std::cos(angle) - b * std::sin(angle);
        out[(t * H + h) * d + i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
  return out;
}

inline std::vector<float> gaussian(size_t count, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<float> v(count);
  for (auto& x : v) x = static_cast<float>(dist(gen));
  return v;
}

// A (n, H, d) block whose every head's rows lie in a random rank-`rank` subspace
// (the same subspace for every call with the same basis_seed).
inline std::vector<float> low_rank_block(int64_t n, int H, int d, int rank, uint64_t basis_seed, uint64_t seed) {
  std::vector<float> z(n * H * d, 0.0f);
  for (int h = 0; h < H; ++h) {
    const auto basis = gaussian(size_t(rank) * d, basis_seed * 131 + h);
    const auto coeff = gaussian(size_t(n) * rank, seed * 977 + h);
    for (int64_t i = 0; i < n; ++i)
      for (int e = 0; e < d; ++e) {
        double x = 0;
        for (int k = 0; k < rank; ++k) x += double(coeff[i * rank + k]) * basis[k * d + e];
        z[(i * H + h) * d + e] = static_cast<float>(x);
      }
  }
  return z;
}

inline double relative_frobenius(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(a[i]) * a[i];
  }
  return std::sqrt(num / den);
}

}  // namespace lowband::compress::test
