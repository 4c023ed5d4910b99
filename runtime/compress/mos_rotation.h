#pragma once
// MoS with m > 1 rotation generators (compression.rotation_params): per key, m
// skew-symmetric A_j and
//   B = Σ_j θ_j·A_j,   U(θ) = U₀ + B·U₀ + ½B²·U₀          (θ ∈ ℝᵐ, per block and head)
// from the products A_j·U₀ and A_j·A_k·U₀ (d, r) computed once at the fit, so a
// block costs O(m²·d·r) for U(θ) and O(n·d·r) for the rest, as with m = 1, whose
// codec keeps the kernels of kernels/subspace.h (bit for bit what it was).
//   dU/dθ_j = A_j·U₀ + ½·Σ_k θ_k·(A_j·A_k + A_k·A_j)·U₀
// so dθ_j = ⟨G, dU/dθ_j⟩ with G = Zᵀ·dC (projection) or dẐᵀ·C (reconstruction).
#include <cstdint>

namespace lowband::compress::mos {

struct Rotation {
  int64_t d = 0, r = 0;
  int m = 1;
  const float* u0 = nullptr;    // (d, r)
  const float* au0 = nullptr;   // m × (d, r): A_j·U₀
  const float* aau0 = nullptr;  // m·m × (d, r): A_j·A_k·U₀ at j·m + k
};

// au0, aau0 of `m` generators a (m × (d, d)) and u0.
void rotation_products(int64_t d, int64_t r, int m, const float* a, const float* u0, float* au0, float* aau0);
// u (d, r) = U(θ), theta (m).
void rotated_basis(const Rotation& rot, const float* theta, float* u);
// dtheta (m) = ⟨g, dU/dθ_j⟩ for g (d, r), in float64 sums.
void rotation_theta_gradient(const Rotation& rot, const float* theta, const float* g, float* dtheta);

// With u = U(θ) (d, r): c (n, r) = z (n, d)·u; z_hat (n, d) = c·uᵀ.
void project(int64_t n, int64_t d, int64_t r, const float* z, const float* u, float* c);
void reconstruct(int64_t n, int64_t d, int64_t r, const float* c, const float* u, float* z_hat);
// g (d, r) = aᵀ·b for a (n, d), b (n, r): the G of the θ gradients.
void outer_sum(int64_t n, int64_t d, int64_t r, const float* a, const float* b, float* g);

}  // namespace lowband::compress::mos
