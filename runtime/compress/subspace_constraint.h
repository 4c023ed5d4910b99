#pragma once
// The Protocol Models constraint that makes subspace boundaries exact: a fixed
// orthonormal basis U (d × k, from a seed: no communication) shared by every
// stage, and a frozen full-rank token table E_fixed (vocab × d, from the seed)
// added to the learnable embedding. Every layer before the last stage boundary
// keeps the column space of its attention output projection wo (d × d) and MLP
// down-projection w_down (d × f) inside span(U), and the learnable embedding's
// rows inside span(U). Then the residual stream minus E_fixed[token] lies in
// span(U) at every boundary.
//
// Kept by projection (not reparametrised as W = U·Z, so the model, its
// parameter layout, checkpoints and optimiser stay what they are): the
// gradients of the constrained tensors are projected before the optimiser
// (P·G for wo, w_down; G·P for the embedding, P = U·Uᵀ), which makes them the
// same whether the boundary carried ∂L/∂x or only Uᵀ·∂L/∂x, and the weights are
// projected again after each AdamW step (its elementwise update leaves span(U)).
//
// Works on the model's device (kernels::Backend matmuls); U and E_fixed are
// generated on the host in float64 and stored float32.
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "kernels/backend_buffer.h"

namespace lowband::compress {

// U (d, k) row-major with orthonormal columns: a Gaussian d × k matrix from
// `seed`, orthonormalised by modified Gram–Schmidt in float64 (twice).
// InputError("compression.boundary.rank") unless 1 <= k <= d (the
// SubspaceConstraint and the subspace/lowrank codecs all build U here).
std::vector<float> subspace_basis(int d, int k, uint64_t seed);
// E_fixed (vocab, d) row-major: normal(0, 0.02) from `seed` (its own stream).
std::vector<float> fixed_embedding(int vocab, int d, uint64_t seed);

class SubspaceConstraint {
 public:
  SubspaceConstraint(const kernels::Backend& k, int d, int rank, uint64_t seed);
  int d() const { return d_; }
  int rank() const { return k_rank_; }
  const std::vector<float>& basis() const { return u_host_; }  // (d, k)

  // W (d, cols), row-major (a weight of out-dimension d): W ← U·(Uᵀ·W).
  void project_columns(float* W, int64_t cols);
  // E (rows, d): E ← (E·U)·Uᵀ.
  void project_rows(float* E, int64_t rows);

 private:
  const kernels::Backend& k_;
  int d_, k_rank_;
  std::vector<float> u_host_;
  kernels::BackendBuffer<float> u_, scratch_;
};

}  // namespace lowband::compress
