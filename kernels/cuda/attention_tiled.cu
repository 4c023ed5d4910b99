// Tiled attention: 64 queries x 64 keys per tile, 256 threads as 16 x 16. A
// thread owns rows ty + 16 i and columns tx + 16 j of every tile product, so
// the 16 lanes that share a row sit in one half-warp (row reductions are four
// shuffles) and, with odd shared-memory row strides, every operand read is
// either a broadcast or 16 distinct banks.
//
//   forward:   one block per (query tile, head): S = Q Kᵀ, online softmax, O += P V.
//   dq:        one block per (query tile, head): recompute P, dP = dO Vᵀ, dQ += dS K.
//   dk, dv:    one block per (key tile, kv head), over every query head of its
//              group: dV += Pᵀ dO, dK += dSᵀ Q.
// dq and dk/dv run as separate kernels (P and dP computed twice) so each output
// is written by one block: no atomics, bit-reproducible results.
//
// Tiles are zero-filled past the ends of the arrays and past head_dim, so the
// products need no bounds checks; masked scores become -inf (forward) or p = 0.
#include <cmath>

#include "kernels/cuda/attention_tiled.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"

namespace lowband::kernels::cuda::detail {
namespace {

constexpr int kTile = 64;           // queries and keys per tile
constexpr int kThreads = 256;       // 16 x 16
constexpr int kSub = kTile / 16;    // tile rows (and columns) per thread
constexpr int kTileLd = kTile + 1;  // row stride of the 64 x 64 score tiles

// acc[i][j] += sum_k A(ty + 16 i, k) * B(tx + 16 j, k) with
// A(r, k) = a[r * kAR + k * kAK] and B(c, k) = b[c * kBC + k * kBK].
template <int RM, int RN, int kAR, int kAK, int kBC, int kBK, int kDepth>
__device__ inline void mac(float (&acc)[RM][RN], const float* a, const float* b) {
  const float* ap = a + (threadIdx.x / 16) * kAR;
  const float* bp = b + (threadIdx.x % 16) * kBC;
#pragma unroll 8
  for (int k = 0; k < kDepth; ++k) {
    float av[RM], bv[RN];
#pragma unroll
    for (int i = 0; i < RM; ++i) av[i] = ap[16 * i * kAR + k * kAK];
#pragma unroll
    for (int j = 0; j < RN; ++j) bv[j] = bp[16 * j * kBC + k * kBK];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < RN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
  }
}

// dst (64 x kMaxD, row stride kMaxD + 1) = rows [row0, row0 + 64) of one head
// of a (rows, heads, head_dim) array; src points at that head's first element.
template <int kMaxD>
__device__ inline void load_tile(float* dst, const float* src, int64_t row0, int64_t rows,
                                 int64_t row_stride, int head_dim) {
  for (int e = threadIdx.x; e < kTile * kMaxD; e += kThreads) {
    const int r = e / kMaxD, d = e % kMaxD;
    const int64_t row = row0 + r;
    dst[r * (kMaxD + 1) + d] = row < rows && d < head_dim ? src[row * row_stride + d] : 0.0f;
  }
}

// Max and sum over the 16 lanes that hold one row.
__device__ inline float row_max(float v) {
  for (int o = 8; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline float row_sum(float v) {
  for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// Keys [0, end) that some query of the tile starting at i0 attends.
__device__ inline int64_t key_end_for(const AttentionShape& s, int64_t i0) {
  if (!s.causal) return s.nk;
  const int64_t last_query = (i0 + kTile < s.nq ? i0 + kTile : s.nq) - 1;
  return clamp64(s.q_offset + last_query - s.k_offset + 1, 0, s.nk);
}

__device__ inline bool attends(const AttentionShape& s, int64_t i, int64_t j) {
  return i < s.nq && j < s.nk && (!s.causal || s.k_offset + j <= s.q_offset + i);
}

// Query tiles in reverse: under a causal mask the last tiles have the most
// keys, and starting them first evens out the tail of the grid.
__device__ inline int64_t query_tile_start(int64_t nq) {
  const int64_t tiles = (nq + kTile - 1) / kTile;
  return (tiles - 1 - int64_t(blockIdx.x)) * kTile;
}

template <int kMaxD>
constexpr size_t forward_smem_bytes() {
  return (3 * kTile * (kMaxD + 1) + kTile * kTileLd) * sizeof(float);
}

template <int kMaxD>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(AttentionShape s, const float* q, const float* k, const float* v, float* out,
                   float* lse) {
  constexpr int ld = kMaxD + 1, C = kMaxD / 16;
  extern __shared__ float smem[];
  float* qs = smem;
  float* ks = qs + kTile * ld;
  float* vs = ks + kTile * ld;
  float* ps = vs + kTile * ld;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16, hd = int(s.head_dim);
  const int64_t i0 = query_tile_start(s.nq), h = blockIdx.y, hk = h / (s.heads / s.kv_heads);
  const int64_t q_stride = s.heads * hd, kv_stride = s.kv_heads * hd;
  load_tile<kMaxD>(qs, q + h * hd, i0, s.nq, q_stride, hd);

  float o[kSub][C] = {}, m[kSub], l[kSub];  // l: this thread's share of the row sum
  #pragma unroll
  for (int i = 0; i < kSub; ++i) m[i] = -INFINITY, l[i] = 0.0f;
  const int64_t key_end = key_end_for(s, i0);
  for (int64_t j0 = 0; j0 < key_end; j0 += kTile) {
    __syncthreads();  // the previous tile's ks, vs, ps are no longer read
    load_tile<kMaxD>(ks, k + hk * hd, j0, s.nk, kv_stride, hd);
    load_tile<kMaxD>(vs, v + hk * hd, j0, s.nk, kv_stride, hd);
    __syncthreads();
    float sc[kSub][kSub] = {};
    mac<kSub, kSub, ld, 1, ld, 1, kMaxD>(sc, qs, ks);
    #pragma unroll
    for (int i = 0; i < kSub; ++i) {
      const int64_t qi = i0 + ty + 16 * i;
      float mx = -INFINITY;
      #pragma unroll
      for (int j = 0; j < kSub; ++j) {
        sc[i][j] = attends(s, qi, j0 + tx + 16 * j) ? sc[i][j] * s.scale : -INFINITY;
        mx = fmaxf(mx, sc[i][j]);
      }
      const float m_new = fmaxf(m[i], row_max(mx));
      const float base = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet
      const float corr = expf(m[i] - base);
      float sum = 0.0f;
      #pragma unroll
      for (int j = 0; j < kSub; ++j) {
        const float p = expf(sc[i][j] - base);
        ps[(ty + 16 * i) * kTileLd + tx + 16 * j] = p;
        sum += p;
      }
      l[i] = l[i] * corr + sum;
      #pragma unroll
      for (int c = 0; c < C; ++c) o[i][c] *= corr;
      m[i] = m_new;
    }
    __syncthreads();
    mac<kSub, C, kTileLd, 1, 1, ld, kTile>(o, ps, vs);  // O(r, d) += P(r, c) V(c, d)
  }
  #pragma unroll
  for (int i = 0; i < kSub; ++i) {
    const float total = row_sum(l[i]);
    const int64_t qi = i0 + ty + 16 * i;
    if (qi >= s.nq) continue;
    float* oi = out + (qi * s.heads + h) * hd;
    #pragma unroll
    for (int c = 0; c < C; ++c) {
      const int d = tx + 16 * c;
      if (d < hd) oi[d] = total > 0.0f ? o[i][c] / total : 0.0f;
    }
    if (tx == 0) lse[h * s.nq + qi] = total > 0.0f ? m[i] + logf(total) : -INFINITY;
  }
}

// p and ds of one (query, key) pair for the backward; 0 where masked or where
// the query attends nothing (L = -inf).
__device__ inline void probability_and_grad(const AttentionShape& s, bool ok, float score,
                                            float dp, float L, float D, float* p, float* ds) {
  *p = ok && L != -INFINITY ? expf(score * s.scale - L) : 0.0f;
  *ds = *p * (dp - D);
}

template <int kMaxD>
constexpr size_t dq_smem_bytes() {
  return (4 * kTile * (kMaxD + 1) + kTile * kTileLd) * sizeof(float);
}

template <int kMaxD>
__global__ void __launch_bounds__(kThreads)
    backward_dq_kernel(AttentionShape s, const float* q, const float* k, const float* v,
                       const float* lse, const float* delta, const float* dout, float* dq) {
  constexpr int ld = kMaxD + 1, C = kMaxD / 16;
  extern __shared__ float smem[];
  float* qs = smem;
  float* gs = qs + kTile * ld;
  float* ks = gs + kTile * ld;
  float* vs = ks + kTile * ld;
  float* dss = vs + kTile * ld;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16, hd = int(s.head_dim);
  const int64_t i0 = query_tile_start(s.nq), h = blockIdx.y, hk = h / (s.heads / s.kv_heads);
  const int64_t q_stride = s.heads * hd, kv_stride = s.kv_heads * hd;
  load_tile<kMaxD>(qs, q + h * hd, i0, s.nq, q_stride, hd);
  load_tile<kMaxD>(gs, dout + h * hd, i0, s.nq, q_stride, hd);
  float L[kSub], D[kSub];
  #pragma unroll
  for (int i = 0; i < kSub; ++i) {
    const int64_t qi = i0 + ty + 16 * i;
    L[i] = qi < s.nq ? lse[h * s.nq + qi] : -INFINITY;
    D[i] = qi < s.nq ? delta[h * s.nq + qi] : 0.0f;
  }
  float acc[kSub][C] = {};
  const int64_t key_end = key_end_for(s, i0);
  for (int64_t j0 = 0; j0 < key_end; j0 += kTile) {
    __syncthreads();
    load_tile<kMaxD>(ks, k + hk * hd, j0, s.nk, kv_stride, hd);
    load_tile<kMaxD>(vs, v + hk * hd, j0, s.nk, kv_stride, hd);
    __syncthreads();
    float sc[kSub][kSub] = {}, dp[kSub][kSub] = {};
    mac<kSub, kSub, ld, 1, ld, 1, kMaxD>(sc, qs, ks);
    mac<kSub, kSub, ld, 1, ld, 1, kMaxD>(dp, gs, vs);  // dP = dO Vᵀ
    #pragma unroll
    for (int i = 0; i < kSub; ++i)
      #pragma unroll
      for (int j = 0; j < kSub; ++j) {
        float p, ds;
        probability_and_grad(s, attends(s, i0 + ty + 16 * i, j0 + tx + 16 * j), sc[i][j],
                             dp[i][j], L[i], D[i], &p, &ds);
        dss[(ty + 16 * i) * kTileLd + tx + 16 * j] = ds;
      }
    __syncthreads();
    mac<kSub, C, kTileLd, 1, 1, ld, kTile>(acc, dss, ks);  // dQ(r, d) += dS(r, c) K(c, d)
  }
  #pragma unroll
  for (int i = 0; i < kSub; ++i) {
    const int64_t qi = i0 + ty + 16 * i;
    if (qi >= s.nq) continue;
    float* g = dq + (qi * s.heads + h) * hd;
    #pragma unroll
    for (int c = 0; c < C; ++c)
      if (tx + 16 * c < hd) g[tx + 16 * c] += s.scale * acc[i][c];
  }
}

template <int kMaxD>
constexpr size_t dkdv_smem_bytes() {
  return (4 * kTile * (kMaxD + 1) + 2 * kTile * kTileLd) * sizeof(float);
}

template <int kMaxD>
__global__ void __launch_bounds__(kThreads)
    backward_dkdv_kernel(AttentionShape s, const float* q, const float* k, const float* v,
                         const float* lse, const float* delta, const float* dout, float* dk,
                         float* dv) {
  constexpr int ld = kMaxD + 1, C = kMaxD / 16;
  extern __shared__ float smem[];
  float* ks = smem;
  float* vs = ks + kTile * ld;
  float* qs = vs + kTile * ld;
  float* gs = qs + kTile * ld;
  float* ps = gs + kTile * ld;
  float* dss = ps + kTile * kTileLd;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16, hd = int(s.head_dim);
  const int64_t j0 = int64_t(blockIdx.x) * kTile, hk = blockIdx.y, group = s.heads / s.kv_heads;
  const int64_t q_stride = s.heads * hd, kv_stride = s.kv_heads * hd;
  load_tile<kMaxD>(ks, k + hk * hd, j0, s.nk, kv_stride, hd);
  load_tile<kMaxD>(vs, v + hk * hd, j0, s.nk, kv_stride, hd);
  float dk_acc[kSub][C] = {}, dv_acc[kSub][C] = {};
  // The first query that attends key j0 (later keys are attended later still).
  const int64_t i_first = s.causal ? clamp64(s.k_offset + j0 - s.q_offset, 0, s.nq) : 0;
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
    for (int64_t i0 = i_first; i0 < s.nq; i0 += kTile) {
      __syncthreads();  // the previous tile's qs, gs, ps, dss are no longer read
      load_tile<kMaxD>(qs, q + h * hd, i0, s.nq, q_stride, hd);
      load_tile<kMaxD>(gs, dout + h * hd, i0, s.nq, q_stride, hd);
      __syncthreads();
      float sc[kSub][kSub] = {}, dp[kSub][kSub] = {};
      mac<kSub, kSub, ld, 1, ld, 1, kMaxD>(sc, qs, ks);  // rows: queries, columns: keys
      mac<kSub, kSub, ld, 1, ld, 1, kMaxD>(dp, gs, vs);
      #pragma unroll
      for (int i = 0; i < kSub; ++i) {
        const int64_t qi = i0 + ty + 16 * i;
        const float L = qi < s.nq ? lse[h * s.nq + qi] : -INFINITY;
        const float D = qi < s.nq ? delta[h * s.nq + qi] : 0.0f;
        #pragma unroll
        for (int j = 0; j < kSub; ++j) {
          float p, ds;
          probability_and_grad(s, attends(s, qi, j0 + tx + 16 * j), sc[i][j], dp[i][j], L, D, &p,
                               &ds);
          ps[(ty + 16 * i) * kTileLd + tx + 16 * j] = p;
          dss[(ty + 16 * i) * kTileLd + tx + 16 * j] = ds;
        }
      }
      __syncthreads();
      // Accumulator rows are keys: dV(c, d) += P(r, c) dO(r, d), dK(c, d) += dS(r, c) Q(r, d).
      mac<kSub, C, 1, kTileLd, 1, ld, kTile>(dv_acc, ps, gs);
      mac<kSub, C, 1, kTileLd, 1, ld, kTile>(dk_acc, dss, qs);
    }
  }
  #pragma unroll
  for (int i = 0; i < kSub; ++i) {
    const int64_t kj = j0 + ty + 16 * i;
    if (kj >= s.nk) continue;
    float* gk = dk + (kj * s.kv_heads + hk) * hd;
    float* gv = dv + (kj * s.kv_heads + hk) * hd;
    #pragma unroll
    for (int c = 0; c < C; ++c) {
      const int d = tx + 16 * c;
      if (d >= hd) continue;
      gk[d] += s.scale * dk_acc[i][c];
      gv[d] += dv_acc[i][c];
    }
  }
}

// Kernels above 48 KiB of dynamic shared memory must ask for it (per device,
// so it is set before every launch; the call costs about a microsecond).
template <typename Kernel>
void allow_shared(Kernel kernel, size_t bytes) {
  LOWBAND_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

unsigned tiles_of(int64_t n) { return unsigned((n + kTile - 1) / kTile); }

template <int kMaxD>
void forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* out,
             float* lse) {
  constexpr size_t bytes = forward_smem_bytes<kMaxD>();
  allow_shared(forward_kernel<kMaxD>, bytes);
  forward_kernel<kMaxD><<<dim3(tiles_of(s.nq), unsigned(s.heads)), kThreads, bytes, stream()>>>(s, q, k, v,
                                                                                      out, lse);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

template <int kMaxD>
void backward(const AttentionShape& s, const float* q, const float* k, const float* v,
              const float* lse, const float* delta, const float* dout, float* dq, float* dk,
              float* dv) {
  constexpr size_t dq_bytes = dq_smem_bytes<kMaxD>(), dkdv_bytes = dkdv_smem_bytes<kMaxD>();
  allow_shared(backward_dq_kernel<kMaxD>, dq_bytes);
  allow_shared(backward_dkdv_kernel<kMaxD>, dkdv_bytes);
  if (s.nq > 0) {
    backward_dq_kernel<kMaxD><<<dim3(tiles_of(s.nq), unsigned(s.heads)), kThreads, dq_bytes, stream()>>>(
        s, q, k, v, lse, delta, dout, dq);
    LOWBAND_CUDA_CHECK_LAUNCH();
  }
  if (s.nk > 0) {
    backward_dkdv_kernel<kMaxD>
        <<<dim3(tiles_of(s.nk), unsigned(s.kv_heads)), kThreads, dkdv_bytes, stream()>>>(
            s, q, k, v, lse, delta, dout, dk, dv);
    LOWBAND_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

bool tiled_attention_forward(const AttentionShape& s, const float* q, const float* k,
                             const float* v, float* out, float* lse) {
  if (s.head_dim <= 32) return forward<32>(s, q, k, v, out, lse), true;
  if (s.head_dim <= 64) return forward<64>(s, q, k, v, out, lse), true;
  if (s.head_dim <= 128) return forward<128>(s, q, k, v, out, lse), true;
  return false;
}

bool tiled_attention_backward(const AttentionShape& s, const float* q, const float* k,
                              const float* v, const float* lse, const float* delta,
                              const float* dout, float* dq, float* dk, float* dv) {
  if (s.head_dim <= 32) return backward<32>(s, q, k, v, lse, delta, dout, dq, dk, dv), true;
  if (s.head_dim <= 64) return backward<64>(s, q, k, v, lse, delta, dout, dq, dk, dv), true;
  if (s.head_dim <= 128) return backward<128>(s, q, k, v, lse, delta, dout, dq, dk, dv), true;
  return false;
}

}  // namespace lowband::kernels::cuda::detail
