#pragma once
// Subspace compression of activations (mixtures of subspaces, docs/design.md §4).
//   U(θ) = U₀ + θ·(A·U₀) + ½θ²·(A²·U₀)        second-order expansion of exp(θA)·U₀
// with U₀ (d, r) orthonormal and A (d, d) skew-symmetric. Callers pass the
// precomputed products AU₀ = A·U₀ and A²U₀ = A·(A·U₀) (subspace_generator_products
// makes them) so every op below costs O(n·d·r), never O(d²).
//   project:      C (n, r) = Z (n, d) · U(θ)
//   reconstruct:  Ẑ (n, d) = C (n, r) · U(θ)ᵀ
// Backwards (dU/dθ = AU₀ + θ·A²U₀):
//   project:      dZ = dC·U(θ)ᵀ,  dθ = ⟨Zᵀ·dC, AU₀ + θ·A²U₀⟩
//   reconstruct:  dC = dẐ·U(θ),   dθ = ⟨dẐᵀ·C, AU₀ + θ·A²U₀⟩
// The backwards OVERWRITE dZ / dC and return dθ (the caller adds it to the
// gradient of whatever produced θ).
// All matrices row-major, float32. cuda:: takes device pointers for every array
// (the returned dθ is a host value).
#include <cstdint>

namespace lowband::kernels {

struct Subspace {
  int64_t d = 0;                // ambient dimension
  int64_t r = 0;                // subspace rank, r <= d
  const float* u0 = nullptr;    // (d, r), orthonormal columns
  const float* au0 = nullptr;   // (d, r) = A·U₀
  const float* a2u0 = nullptr;  // (d, r) = A·A·U₀
};

// Throws InputError("<where>.d" / ".r" / ".n") on non-positive or inconsistent sizes.
void check_subspace(const Subspace& s, int64_t n, const char* where);

namespace cpu {
// au0 = A·U₀ and a2u0 = A·(A·U₀); a (d, d), u0 (d, r), outputs (d, r).
void subspace_generator_products(int64_t d, int64_t r, const float* a, const float* u0, float* au0,
                                 float* a2u0);
// u (d, r) = U(θ).
void subspace_basis(const Subspace& s, float theta, float* u);
// z (n, d) -> c (n, r).
void subspace_project(const Subspace& s, float theta, int64_t n, const float* z, float* c);
// c (n, r) -> z_hat (n, d).
void subspace_reconstruct(const Subspace& s, float theta, int64_t n, const float* c, float* z_hat);
// z (n, d), dc (n, r) -> dz (n, d); returns dθ.
float subspace_project_backward(const Subspace& s, float theta, int64_t n, const float* z,
                                const float* dc, float* dz);
// c (n, r), dz_hat (n, d) -> dc (n, r); returns dθ.
float subspace_reconstruct_backward(const Subspace& s, float theta, int64_t n, const float* c,
                                    const float* dz_hat, float* dc);

// Top-r principal directions of the rows of z (n, d), to warm-start U₀:
// eigenvectors of the d×d Gram matrix ZᵀZ (center = false, the default for MoS:
// C = Z·U must reconstruct Z itself, mean included, and the best rank-r
// least-squares subspace for that is the top eigenvectors of the uncentred
// ZᵀZ) or of the covariance (Z − mean)ᵀ(Z − mean) (center = true).
// The Gram matrix is formed in float (sgemm) and diagonalised in double by
// cyclic Jacobi (meant for d <= 512 or so: O(d³) per sweep).
// u0 (d, r): orthonormal columns sorted by decreasing eigenvalue, each column's
// largest-magnitude entry made positive (a deterministic sign).
// eigenvalues (r), optional: the matching eigenvalues of ZᵀZ (not divided by n).
void principal_directions(int64_t n, int64_t d, int64_t r, const float* z, bool center, float* u0,
                          float* eigenvalues = nullptr);
}  // namespace cpu

namespace detail {
// Symmetric eigen-decomposition of a (d, d), row-major double, by cyclic
// Jacobi rotations: a is destroyed; values (d) sorted decreasing, vectors (d, d)
// row-major with eigenvector k in column k. Shared by the CPU and CUDA paths.
void symmetric_eigen_jacobi(int64_t d, double* a, double* values, double* vectors);
// From a (d, d) Gram matrix in float (host): the top r eigenvectors into u0
// (d, r, host) with the sign convention above, and optionally their eigenvalues.
void top_eigenvectors(int64_t d, int64_t r, const float* gram, float* u0, float* eigenvalues);
}  // namespace detail

namespace cuda {
void subspace_generator_products(int64_t d, int64_t r, const float* a, const float* u0, float* au0,
                                 float* a2u0);
void subspace_basis(const Subspace& s, float theta, float* u);
void subspace_project(const Subspace& s, float theta, int64_t n, const float* z, float* c);
void subspace_reconstruct(const Subspace& s, float theta, int64_t n, const float* c, float* z_hat);
float subspace_project_backward(const Subspace& s, float theta, int64_t n, const float* z,
                                const float* dc, float* dz);
float subspace_reconstruct_backward(const Subspace& s, float theta, int64_t n, const float* c,
                                    const float* dz_hat, float* dc);
// Gram matrix on the GPU (cuBLAS), eigen-decomposition on the host (the d×d
// Jacobi is not worth a GPU kernel at d <= 512); z and u0 are device pointers,
// eigenvalues (if given) a host pointer.
void principal_directions(int64_t n, int64_t d, int64_t r, const float* z, bool center, float* u0,
                          float* eigenvalues = nullptr);
}  // namespace cuda

}  // namespace lowband::kernels
