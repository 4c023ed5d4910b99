// Blockwise attention on the CPU: per (head, query tile) an online softmax over
// key tiles, the tile products in oneDNN's sgemm (attention_gemm.h; one thread
// per task, oneDNN runs single-threaded inside our OpenMP region), the exp in
// AVX-512 (softmax_simd.h). Memory beyond the inputs and outputs: per-thread
// tiles and per-head copies of K and V (forward), of Q, dO, K, Kᵀ and Vᵀ plus
// up to kDqPartials partial dq (backward) -- all linear in the sequence, never nq x nk.
// Every result is a fixed function of the inputs: no sum's grouping depends on
// the thread count or on which thread ran which task.
#include "kernels/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/cpu/attention_gemm.h"
#include "kernels/cpu/softmax_simd.h"

namespace lowband::kernels::cpu {
namespace {

// Tile sizes: a 192 x 256 score tile (192 KiB) and the Q, K, V tiles it reads
// stay in L2 (2 MiB per core here). Chosen with bench_attention among
// 66-192 x 252-504 (see kernels/README.md).
constexpr int64_t kQueryTile = 192;
constexpr int64_t kKeyTile = 256;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Below this many multiply-adds a call runs on one thread: waking the OpenMP
// team costs more than it saves (and much more on a loaded machine).
constexpr double kMinParallelMacs = 1 << 20;
// The backward sums dq over key tiles in this many partial copies, a number
// that must not depend on the thread count (it fixes the rounding of dq; see
// attention_backward). It also caps the backward's parallelism at
// kDqPartials x kv_heads tasks. 2 = the old one copy per thread on this
// 2-core machine; 4 was ~5-10 % slower here (one more |q| to allocate, fault
// in and sum).
constexpr int64_t kDqPartials = 2;

// Keys of this block that query row `i` may attend, as a prefix [0, n).
inline int64_t attended_keys(const AttentionShape& s, int64_t i) {
  if (!s.causal) return s.nk;
  return std::clamp<int64_t>(s.q_offset + i - s.k_offset + 1, 0, s.nk);
}

// A per-head copy of x (rows, heads, head_dim) so that the tile GEMMs read
// their B operand row-contiguous and free of cache-set aliasing: head h starts
// at data + h * head_stride; row i at + i * ld (transposed: dimension d at
// + d * ld, rows contiguous, ld padded to an odd number of cache lines).
struct PerHead {
  detail::AlignedFloats data;  // not zero-filled: every element read is written
  int64_t ld = 0, head_stride = 0;
  const float* head(int64_t h) const { return data.get() + h * head_stride; }
};

PerHead pack_heads(int64_t rows, int64_t heads, int64_t hd, const float* x, bool transposed,
                   bool parallel) {
  PerHead p;
  if (transposed) {
    int64_t lines = (rows + 15) / 16;
    if (lines % 2 == 0) ++lines;
    p.ld = lines * 16;
    p.head_stride = hd * p.ld;
  } else {
    p.ld = hd;
    p.head_stride = rows * hd;
  }
  p.data = detail::aligned_floats(size_t(heads * p.head_stride));
  const int64_t chunks = (rows + 255) / 256;
#pragma omp parallel for schedule(static) collapse(2) if (parallel)
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t i0 = c * 256, n = std::min<int64_t>(256, rows - i0);
      const float* src = x + (i0 * heads + h) * hd;
      float* dst = p.data.get() + h * p.head_stride;
      if (transposed) {
        detail::transpose(n, hd, src, heads * hd, dst + i0, p.ld);
      } else {
        for (int64_t i = 0; i < n; ++i)
          std::copy(src + i * heads * hd, src + i * heads * hd + hd, dst + (i0 + i) * hd);
      }
    }
  return p;
}

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse) {
  check_attention_shape(s, "attention_forward");
  const int64_t hd = s.head_dim, group = s.heads / s.kv_heads;
  const int64_t ldq = s.heads * hd;
  const int64_t q_tiles = (s.nq + kQueryTile - 1) / kQueryTile;
  const int64_t tasks = q_tiles * s.heads;
  const bool parallel = double(s.nq) * double(s.nk) * double(s.heads * hd) >= kMinParallelMacs;
  const PerHead kt = pack_heads(s.nk, s.kv_heads, hd, k, true, parallel);
  const PerHead vp = pack_heads(s.nk, s.kv_heads, hd, v, false, parallel);

#pragma omp parallel if (parallel)
  {
    const detail::AlignedFloats scores = detail::aligned_floats(kQueryTile * kKeyTile);
    const detail::AlignedFloats acc = detail::aligned_floats(kQueryTile * hd);
    std::vector<float> row_m(kQueryTile), row_l(kQueryTile);
    // Causal tiles late in the sequence cost most: hand them out first.
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t qt = q_tiles - 1 - t / s.heads, h = t % s.heads, hk = h / group;
      const int64_t i0 = qt * kQueryTile, bq = std::min(kQueryTile, s.nq - i0);
      const float* qp = q + (i0 * s.heads + h) * hd;
      std::fill(acc.get(), acc.get() + bq * hd, 0.0f);
      std::fill(row_m.begin(), row_m.end(), kNegInf);
      std::fill(row_l.begin(), row_l.end(), 0.0f);
      const int64_t key_end = attended_keys(s, i0 + bq - 1);  // the tile's last row sees most
      for (int64_t j0 = 0; j0 < key_end; j0 += kKeyTile) {
        const int64_t bk = std::min(kKeyTile, key_end - j0);
        float* S = scores.get();
        const int64_t lds = detail::padded_ld(bk);
        detail::tile_gemm(bq, bk, hd, s.scale, qp, ldq, 1, kt.head(hk) + j0, kt.ld, false, S, lds);
        for (int64_t r = 0; r < bq; ++r) {
          float* row = S + r * lds;
          const int64_t valid = std::clamp<int64_t>(attended_keys(s, i0 + r) - j0, 0, bk);
          std::fill(row + valid, row + bk, 0.0f);  // masked keys get P = 0
          if (valid == 0) continue;
          const float m_new = std::max(row_m[r], detail::row_max(row, valid));
          const float corr = detail::exp_f32(row_m[r] - m_new);  // 0 on the first keys (m = -inf)
          row_l[r] = row_l[r] * corr + detail::exp_shift_sum(row, valid, m_new);
          row_m[r] = m_new;
          if (corr != 1.0f) {
            float* a = acc.get() + r * hd;
            for (int64_t d = 0; d < hd; ++d) a[d] *= corr;
          }
        }
        detail::tile_gemm(bq, hd, bk, 1.0f, S, lds, 1, vp.head(hk) + j0 * hd, hd, true, acc.get(),
                          hd);
      }
      for (int64_t r = 0; r < bq; ++r) {
        float* o = out + ((i0 + r) * s.heads + h) * hd;
        const float* a = acc.get() + r * hd;
        if (row_l[r] > 0.0f) {
          const float inv = 1.0f / row_l[r];
          for (int64_t d = 0; d < hd; ++d) o[d] = a[d] * inv;
          lse[h * s.nq + i0 + r] = row_m[r] + std::log(row_l[r]);
        } else {  // this row attends no key of the block
          std::fill(o, o + hd, 0.0f);
          lse[h * s.nq + i0 + r] = kNegInf;
        }
      }
    }
  }
}

void attention_merge(int64_t nq, int64_t heads, int64_t head_dim, float* out_a, float* lse_a,
                     const float* out_b, const float* lse_b) {
#pragma omp parallel for schedule(static) if (double(nq * heads * head_dim) >= kMinParallelMacs)
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t h = 0; h < heads; ++h) {
      const float la = lse_a[h * nq + i], lb = lse_b[h * nq + i];
      float* oa = out_a + (i * heads + h) * head_dim;
      const float* ob = out_b + (i * heads + h) * head_dim;
      if (lb == kNegInf) continue;  // b saw no key
      if (la == kNegInf) {
        std::copy(ob, ob + head_dim, oa);
        lse_a[h * nq + i] = lb;
        continue;
      }
      const float m = std::max(la, lb);
      const float wa = std::exp(la - m), wb = std::exp(lb - m), sum = wa + wb;
      const float ca = wa / sum, cb = wb / sum;
      for (int64_t d = 0; d < head_dim; ++d) oa[d] = ca * oa[d] + cb * ob[d];
      lse_a[h * nq + i] = m + std::log(sum);
    }
  }
}

void attention_backward_delta(int64_t nq, int64_t heads, int64_t head_dim, const float* out,
                              const float* dout, float* delta) {
#pragma omp parallel for schedule(static) if (double(nq * heads * head_dim) >= kMinParallelMacs)
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* o = out + (i * heads + h) * head_dim;
      const float* g = dout + (i * heads + h) * head_dim;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t d = 0; d < head_dim; ++d) sum += o[d] * g[d];
      delta[h * nq + i] = sum;
    }
  }
}

// Tasks are (dq partial c, kv head hk). Key tiles are dealt to the C partials
// in snake order -- tiles 0..C-1 to partials 0..C-1, tiles C..2C-1 to partials
// C-1..0, and so on -- which evens out the causal cost (early key tiles see the
// most queries). Task (c, hk) runs partial c's key tiles of kv head hk in
// increasing order; it owns their rows of dk and dv and the rows of its query
// heads in partial c, so nothing is shared. Each partial is thus a sum in
// key-tile order, and dq adds the partials in order 0, 1, ..., C - 1. C depends
// on the shape only, so dq, dk and dv are the same bit for bit whatever the
// thread count or the timing (the earlier per-thread dq copies, filled by a
// dynamic schedule, were not). Q, dO, K (and Kᵀ, Vᵀ) are repacked per head first.
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* lse, const float* delta, const float* dout, float* dq,
                        float* dk, float* dv) {
  check_attention_shape(s, "attention_backward");
  const int64_t hd = s.head_dim, group = s.heads / s.kv_heads;
  const int64_t ldq = s.heads * hd;
  const int64_t k_tiles = (s.nk + kKeyTile - 1) / kKeyTile;
  const bool parallel = double(s.nq) * double(s.nk) * double(s.heads * hd) >= kMinParallelMacs;
  const int64_t partials = parallel ? std::clamp<int64_t>(k_tiles, 1, kDqPartials) : 1;
  const int64_t tasks = partials * s.kv_heads;
  const int threads = parallel ? int(std::clamp<int64_t>(omp_get_max_threads(), 1, tasks)) : 1;
  // First query row that attends key j0 (all later ones do too).
  auto first_query = [&](int64_t j0) {
    return s.causal ? std::clamp<int64_t>(s.k_offset + j0 - s.q_offset, 0, s.nq) : int64_t(0);
  };
  // Partial c, laid out (heads, nq, hd), holds rows from first_query(c · kKeyTile)
  // on (its first key tile writes them, later ones accumulate); rows before that
  // are never written nor read, so it needs no zero fill.
  const int64_t dq_stride = detail::padded_ld(s.nq * ldq);  // the same alignment for all
  const detail::AlignedFloats dq_partial = detail::aligned_floats(size_t(partials * dq_stride));
  const PerHead qp = pack_heads(s.nq, s.heads, hd, q, false, parallel);
  const PerHead gp = pack_heads(s.nq, s.heads, hd, dout, false, parallel);
  const PerHead kp = pack_heads(s.nk, s.kv_heads, hd, k, false, parallel);
  const PerHead kt = pack_heads(s.nk, s.kv_heads, hd, k, true, parallel);
  const PerHead vt = pack_heads(s.nk, s.kv_heads, hd, v, true, parallel);

#pragma omp parallel num_threads(threads)
  {
    const detail::AlignedFloats P = detail::aligned_floats(kQueryTile * kKeyTile);
    const detail::AlignedFloats dS = detail::aligned_floats(kQueryTile * kKeyTile);
    const detail::AlignedFloats dk_tile = detail::aligned_floats(kKeyTile * hd);
    const detail::AlignedFloats dv_tile = detail::aligned_floats(kKeyTile * hd);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t c = t / s.kv_heads, hk = t % s.kv_heads;
      float* my_dq = dq_partial.get() + c * dq_stride;
      for (int64_t round = 0; round * partials < k_tiles; ++round) {
        const int64_t key_tile = round * partials + (round % 2 == 0 ? c : partials - 1 - c);
        if (key_tile >= k_tiles) continue;
        const bool first_tile = round == 0;  // writes (not adds to) the partial's rows
        const int64_t j0 = key_tile * kKeyTile, bk = std::min(kKeyTile, s.nk - j0);
        const int64_t lds = detail::padded_ld(bk);
        std::fill(dk_tile.get(), dk_tile.get() + bk * hd, 0.0f);
        std::fill(dv_tile.get(), dv_tile.get() + bk * hd, 0.0f);
        const int64_t i_start = first_query(j0);
        for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
          for (int64_t i0 = i_start; i0 < s.nq; i0 += kQueryTile) {
            const int64_t bq = std::min(kQueryTile, s.nq - i0);
            const float* qi = qp.head(h) + i0 * hd;
            const float* gi = gp.head(h) + i0 * hd;
            detail::tile_gemm(bq, bk, hd, s.scale, qi, hd, 1, kt.head(hk) + j0, kt.ld, false,
                              P.get(), lds);
            detail::tile_gemm(bq, bk, hd, 1.0f, gi, hd, 1, vt.head(hk) + j0, vt.ld, false, dS.get(),
                              lds);
            for (int64_t r = 0; r < bq; ++r) {  // P = exp(S − lse), dS = P ∘ (dP − D)
              float* p = P.get() + r * lds;
              float* ds = dS.get() + r * lds;
              const float L = lse[h * s.nq + i0 + r], D = delta[h * s.nq + i0 + r];
              const int64_t valid =
                  L == kNegInf ? 0 : std::clamp<int64_t>(attended_keys(s, i0 + r) - j0, 0, bk);
              detail::exp_shift(p, valid, L);
              std::fill(p + valid, p + bk, 0.0f);
#pragma omp simd
              for (int64_t j = 0; j < bk; ++j) ds[j] = p[j] * (ds[j] - D);
            }
            // dV += Pᵀ·dO, dK += scale·dSᵀ·Q, dQ += scale·dS·K.
            detail::tile_gemm(bk, hd, bq, 1.0f, P.get(), 1, lds, gi, hd, true, dv_tile.get(), hd);
            detail::tile_gemm(bk, hd, bq, s.scale, dS.get(), 1, lds, qi, hd, true, dk_tile.get(),
                              hd);
            detail::tile_gemm(bq, hd, bk, s.scale, dS.get(), lds, 1, kp.head(hk) + j0 * hd, hd,
                              !first_tile, my_dq + (h * s.nq + i0) * hd, hd);
          }
        }
        for (int64_t j = 0; j < bk; ++j) {
          float* dkr = dk + ((j0 + j) * s.kv_heads + hk) * hd;
          float* dvr = dv + ((j0 + j) * s.kv_heads + hk) * hd;
          for (int64_t d = 0; d < hd; ++d) {
            dkr[d] += dk_tile[size_t(j * hd + d)];
            dvr[d] += dv_tile[size_t(j * hd + d)];
          }
        }
      }
    }
    // Add the partials into dq in order 0, 1, ..., each thread a slice of the
    // query rows. Partial c's first key tile is tile c, so it holds rows from
    // first_query(c · kKeyTile) on, which grows with c.
#pragma omp for schedule(static)
    for (int64_t i = 0; i < s.nq; ++i)
      for (int64_t h = 0; h < s.heads; ++h) {
        float* dst = dq + i * ldq + h * hd;
        for (int64_t c = 0; c < std::min(partials, k_tiles) && i >= first_query(c * kKeyTile);
             ++c) {
          const float* src = dq_partial.get() + c * dq_stride + (h * s.nq + i) * hd;
#pragma omp simd
          for (int64_t d = 0; d < hd; ++d) dst[d] += src[d];
        }
      }
  }
}

}  // namespace lowband::kernels::cpu
