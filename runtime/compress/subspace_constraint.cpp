#include "runtime/compress/subspace_constraint.h"

#include <string>

#include "common/error.h"
#include "runtime/compress/mos_random.h"

namespace lowband::compress {
namespace {

// Separate streams of one seed, so U and E_fixed are independent draws.
enum Stream : int64_t { kBasis = 1, kFixedEmbedding = 2 };

}  // namespace

std::vector<float> subspace_basis(int d, int k, uint64_t seed) {
  if (d < 1) throw InputError("model.d_model", "must be at least 1");
  if (k < 1 || k > d)
    throw InputError("compression.boundary.rank",
                     "expected an integer in [1, " + std::to_string(d) + "] (model.d_model), got " + std::to_string(k));
  // The MoS codec's generator: Gaussian columns, modified Gram–Schmidt twice in float64.
  return mos::random_orthonormal(d, k, mos::stream_key(seed, {kBasis}));
}

std::vector<float> fixed_embedding(int vocab, int d, uint64_t seed) {
  mos::Rng rng(mos::stream_key(seed, {kFixedEmbedding}));
  std::vector<float> e(size_t(vocab) * size_t(d));
  for (auto& x : e) x = static_cast<float>(0.02 * rng.normal());
  return e;
}

SubspaceConstraint::SubspaceConstraint(const kernels::Backend& k, int d, int rank, uint64_t seed)
    : k_(k), d_(d), k_rank_(rank), u_host_(subspace_basis(d, rank, seed)), u_(k, u_host_) {}

void SubspaceConstraint::project_columns(float* W, int64_t cols) {
  if (cols <= 0) return;
  using kernels::Trans;
  const size_t need = size_t(k_rank_) * size_t(cols);
  if (scratch_.size() < need) scratch_ = kernels::BackendBuffer<float>(k_, need);
  float* t = scratch_.data();
  // t (k, cols) = Uᵀ·W, then W (d, cols) = U·t.
  k_.matmul(Trans::yes, Trans::no, k_rank_, cols, d_, 1.0f, u_.data(), k_rank_, W, cols, 0.0f, t, cols);
  k_.matmul(Trans::no, Trans::no, d_, cols, k_rank_, 1.0f, u_.data(), k_rank_, t, cols, 0.0f, W, cols);
}

void SubspaceConstraint::project_rows(float* E, int64_t rows) {
  if (rows <= 0) return;
  using kernels::Trans;
  const size_t need = size_t(rows) * size_t(k_rank_);
  if (scratch_.size() < need) scratch_ = kernels::BackendBuffer<float>(k_, need);
  float* t = scratch_.data();
  // t (rows, k) = E·U, then E (rows, d) = t·Uᵀ.
  k_.matmul(Trans::no, Trans::no, rows, k_rank_, d_, 1.0f, E, d_, u_.data(), k_rank_, 0.0f, t, k_rank_);
  k_.matmul(Trans::no, Trans::yes, rows, d_, k_rank_, 1.0f, t, k_rank_, u_.data(), k_rank_, 0.0f, E, d_);
}

}  // namespace lowband::compress
