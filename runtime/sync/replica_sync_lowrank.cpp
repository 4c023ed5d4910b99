// ReplicaSync's lowrank_grad (sync/replica_sync.h): PowerSGD (Vogels et al., 2019)
// with error feedback. Unlike a sparse slice, every coordinate gets some of its
// gradient every step: a slice or top-k leaves a coordinate waiting ~1/fraction
// steps in e, and AdamW then steps on stale, bursty gradients.
// Per matrix tensor (n x m, rank r), M_r = e_r + g_r:
//   P = Σ_r M_r Q            (all-reduce; Q: m x r, the same on every rank)
//   P <- orthonormal columns (Gram–Schmidt in float64, the same on every rank)
//   Q_r = M_rᵀ P; Q = Σ_r Q_r (all-reduce; kept: next step's warm start)
//   aggregate = P Qᵀ;  e_r <- M_r − P Q_rᵀ
// Vectors (norm gains) are all-reduced whole with the first message.
#include <algorithm>
#include <cmath>

#include "runtime/sync/replica_sync.h"

namespace lowband::sync {
namespace {

bool is_matrix(const model::TensorInfo& t) { return t.rows > 1 && t.cols > 1; }

uint64_t mix(uint64_t x) {  // splitmix64: Q's seeded start
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Columns of the n x r row-major `p` made orthonormal in order (a column that
// is (numerically) in the span of the earlier ones becomes 0).
void orthonormalize(float* p, int64_t n, int64_t r) {
  std::vector<double> col(static_cast<size_t>(n));
  for (int64_t k = 0; k < r; ++k) {
    for (int64_t i = 0; i < n; ++i) col[size_t(i)] = p[i * r + k];
    for (int64_t j = 0; j < k; ++j) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += col[size_t(i)] * double(p[i * r + j]);
      for (int64_t i = 0; i < n; ++i) col[size_t(i)] -= dot * double(p[i * r + j]);
    }
    double norm = 0;
    for (int64_t i = 0; i < n; ++i) norm += col[size_t(i)] * col[size_t(i)];
    norm = std::sqrt(norm);
    const double scale = norm > 1e-30 ? 1.0 / norm : 0.0;
    for (int64_t i = 0; i < n; ++i) p[i * r + k] = float(col[size_t(i)] * scale);
  }
}

// out <- M X (X: m x r) or, transposed, Mᵀ X (X: n x r), for the n x m row-major
// M; float64 sums, rounded once.
void multiply(const float* M, int64_t n, int64_t m, const float* X, int64_t r, bool transposed, float* out) {
  const int64_t rows = transposed ? m : n, inner = transposed ? n : m;
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t k = 0; k < r; ++k) {
      double sum = 0;
      for (int64_t b = 0; b < inner; ++b)
        sum += double(transposed ? M[b * m + a] : M[a * m + b]) * double(X[b * r + k]);
      out[a * r + k] = float(sum);
    }
}

}  // namespace

int64_t lowrank_grad_rank(const model::TensorInfo& t, double fraction) {
  const double r = fraction * double(t.count()) / double(t.rows + t.cols);
  return std::clamp<int64_t>(int64_t(std::llround(r)), 1, std::min(t.rows, t.cols));
}

std::pair<int64_t, int64_t> lowrank_grad_elements(const model::ParamLayout& layout, double fraction) {
  int64_t first = 0, second = 0;
  for (const auto& t : layout.tensors()) {
    if (!is_matrix(t)) {
      first += t.count();
      continue;
    }
    const int64_t r = lowrank_grad_rank(t, fraction);
    first += t.rows * r, second += t.cols * r;
  }
  return {first, second};
}

void ReplicaSync::exchange_lowrank(comm::Communicator& comm, const model::ParamLayout& layout, float* g) {
  const double fraction = s_.compression.sync_fraction;
  const auto& tensors = layout.tensors();
  const auto [first, second] = lowrank_grad_elements(layout, fraction);
  if (q_.empty()) {  // seeded, the same on every rank
    q_.resize(static_cast<size_t>(second));
    for (size_t i = 0; i < q_.size(); ++i)
      q_[i] = float(double(mix(s_.training.seed * 0x100000001b3ULL + i) >> 11) * 0x1.0p-53 - 0.5);
  }
  for (int64_t i = 0; i < layout.count(); ++i) error_[size_t(i)] += g[i];  // M = e + g
  std::vector<float> p(static_cast<size_t>(first)), q(static_cast<size_t>(second));
  int64_t at_p = 0, at_q = 0;
  for (const auto& t : tensors) {  // P_r = M_r Q; vectors whole
    const float* M = error_.data() + t.offset;
    if (!is_matrix(t)) {
      std::copy(M, M + t.count(), p.begin() + at_p);
      at_p += t.count();
      continue;
    }
    const int64_t n = t.rows, m = t.cols, r = lowrank_grad_rank(t, fraction);
    multiply(M, n, m, q_.data() + at_q, r, false, p.data() + at_p);
    at_p += n * r, at_q += m * r;
  }
  const double b = wire_bytes_per_element_;
  comm.all_reduce_sum(p.data(), first, comm::Wire("grad_sync", double(first) * b));
  at_p = at_q = 0;
  for (const auto& t : tensors) {  // orthonormal P; Q_r = M_rᵀ P
    if (!is_matrix(t)) {
      at_p += t.count();
      continue;
    }
    const int64_t n = t.rows, m = t.cols, r = lowrank_grad_rank(t, fraction);
    float* P = p.data() + at_p;
    orthonormalize(P, n, r);
    multiply(error_.data() + t.offset, n, m, P, r, true, q.data() + at_q);
    at_p += n * r, at_q += m * r;
  }
  std::vector<float> q_sum = q;
  comm.all_reduce_sum(q_sum.data(), second, comm::Wire("grad_sync", double(second) * b));
  at_p = at_q = 0;
  for (const auto& t : tensors) {  // aggregate P Qᵀ; e_r <- M_r − P Q_rᵀ
    float* M = error_.data() + t.offset;
    float* G = g + t.offset;
    if (!is_matrix(t)) {
      std::copy(p.begin() + at_p, p.begin() + at_p + t.count(), G);
      std::fill(M, M + t.count(), 0.0f);
      at_p += t.count();
      continue;
    }
    const int64_t n = t.rows, m = t.cols, r = lowrank_grad_rank(t, fraction);
    const float *P = p.data() + at_p, *Qr = q.data() + at_q, *Qs = q_sum.data() + at_q;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double mine = 0, all = 0;
        for (int64_t k = 0; k < r; ++k) {
          mine += double(P[i * r + k]) * double(Qr[j * r + k]);
          all += double(P[i * r + k]) * double(Qs[j * r + k]);
        }
        M[i * m + j] = float(double(M[i * m + j]) - mine);
        G[i * m + j] = float(all);
      }
    at_p += n * r, at_q += m * r;
  }
  q_ = std::move(q_sum);
}

}  // namespace lowband::sync
