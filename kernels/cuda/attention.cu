// Blockwise attention on the GPU. head_dim <= 128 runs the tiled kernels of
// attention_tiled.cu. Larger head dims run the plain kernels here: one thread
// block per (query row, head) with an online softmax over chunks of kBlock
// keys, and for the backward one block per query row (dq) and one per key row
// (dk, dv), so nothing is accumulated across blocks and no atomics are needed.
// They are plainly correct, not tuned: K and V stream from global memory for
// every query row (about 1.5 % of an H100's fp32 peak).
#include <cmath>

#include "kernels/attention.h"
#include "kernels/cuda/attention_tiled.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"

namespace lowband::kernels::cuda {
namespace {

constexpr int kBlock = 128;  // threads per block = keys (or queries) per chunk

__device__ inline int64_t attended_keys(const AttentionShape& s, int64_t i) {
  if (!s.causal) return s.nk;
  const int64_t n = s.q_offset + i - s.k_offset + 1;
  return n < 0 ? 0 : (n > s.nk ? s.nk : n);
}

__device__ inline float dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// Shared memory: acc (hd) then p (kBlock) then 32 reduction slots.
__global__ void forward_kernel(AttentionShape s, const float* q, const float* k, const float* v,
                               float* out, float* lse) {
  extern __shared__ float smem[];
  const int64_t hd = s.head_dim, i = blockIdx.x, h = blockIdx.y, hk = h / (s.heads / s.kv_heads);
  float* acc = smem;
  float* p = acc + hd;
  float* scratch = p + kBlock;
  const float* qi = q + (i * s.heads + h) * hd;
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const int64_t key_end = attended_keys(s, i);
  for (int64_t j0 = 0; j0 < key_end; j0 += kBlock) {
    const int64_t j = j0 + threadIdx.x;
    const float score =
        j < key_end ? s.scale * dot(qi, k + (j * s.kv_heads + hk) * hd, hd) : -INFINITY;
    const float m_new = fmaxf(m, detail::block_max(score, scratch));
    const float pj = j < key_end ? expf(score - m_new) : 0.0f;
    const float corr = expf(m - m_new);  // 0 on the first chunk (m = -inf)
    l = l * corr + detail::block_sum(pj, scratch);
    p[threadIdx.x] = pj;
    __syncthreads();
    const int64_t nj = key_end - j0 < kBlock ? key_end - j0 : kBlock;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float sum = acc[d] * corr;
      for (int64_t t = 0; t < nj; ++t) sum += p[t] * v[((j0 + t) * s.kv_heads + hk) * hd + d];
      acc[d] = sum;
    }
    __syncthreads();
    m = m_new;
  }
  float* oi = out + (i * s.heads + h) * hd;
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) oi[d] = l > 0.0f ? acc[d] / l : 0.0f;
  if (threadIdx.x == 0) lse[h * s.nq + i] = l > 0.0f ? m + logf(l) : -INFINITY;
}

__global__ void merge_kernel(int64_t nq, int64_t heads, int64_t hd, float* out_a, float* lse_a,
                             const float* out_b, const float* lse_b) {
  for (int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; row < nq * heads;
       row += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = row / heads, h = row % heads;
    const float la = lse_a[h * nq + i], lb = lse_b[h * nq + i];
    float* oa = out_a + row * hd;
    const float* ob = out_b + row * hd;
    if (lb == -INFINITY) continue;
    if (la == -INFINITY) {
      for (int64_t d = 0; d < hd; ++d) oa[d] = ob[d];
      lse_a[h * nq + i] = lb;
      continue;
    }
    const float m = fmaxf(la, lb), wa = expf(la - m), wb = expf(lb - m), sum = wa + wb;
    const float ca = wa / sum, cb = wb / sum;
    for (int64_t d = 0; d < hd; ++d) oa[d] = ca * oa[d] + cb * ob[d];
    lse_a[h * nq + i] = m + logf(sum);
  }
}

__global__ void delta_kernel(int64_t nq, int64_t heads, int64_t hd, const float* out,
                             const float* dout, float* delta) {
  for (int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; row < nq * heads;
       row += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = row / heads, h = row % heads;
    delta[h * nq + i] = dot(out + row * hd, dout + row * hd, hd);
  }
}

// dq for query row blockIdx.x, head blockIdx.y. Shared: acc (hd), ds (kBlock).
__global__ void backward_dq_kernel(AttentionShape s, const float* q, const float* k, const float* v,
                                   const float* lse, const float* delta, const float* dout,
                                   float* dq) {
  extern __shared__ float smem[];
  const int64_t hd = s.head_dim, i = blockIdx.x, h = blockIdx.y, hk = h / (s.heads / s.kv_heads);
  float* acc = smem;
  float* ds = acc + hd;
  const float* qi = q + (i * s.heads + h) * hd;
  const float* gi = dout + (i * s.heads + h) * hd;
  const float L = lse[h * s.nq + i], D = delta[h * s.nq + i];
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) acc[d] = 0.0f;
  const int64_t key_end = L == -INFINITY ? 0 : attended_keys(s, i);
  for (int64_t j0 = 0; j0 < key_end; j0 += kBlock) {
    const int64_t j = j0 + threadIdx.x;
    float dsj = 0.0f;
    if (j < key_end) {
      const float* kj = k + (j * s.kv_heads + hk) * hd;
      const float pj = expf(s.scale * dot(qi, kj, hd) - L);
      dsj = pj * (dot(gi, v + (j * s.kv_heads + hk) * hd, hd) - D);
    }
    __syncthreads();  // the previous chunk's ds is no longer read
    ds[threadIdx.x] = dsj;
    __syncthreads();
    const int64_t nj = key_end - j0 < kBlock ? key_end - j0 : kBlock;
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
      float sum = 0.0f;
      for (int64_t t = 0; t < nj; ++t) sum += ds[t] * k[((j0 + t) * s.kv_heads + hk) * hd + d];
      acc[d] += s.scale * sum;
    }
  }
  __syncthreads();
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) dq[(i * s.heads + h) * hd + d] += acc[d];
}

// dk, dv for key row blockIdx.x, kv head blockIdx.y, over every query head of
// its group. Shared: dk_acc (hd), dv_acc (hd), p (kBlock), ds (kBlock).
__global__ void backward_dkdv_kernel(AttentionShape s, const float* q, const float* k,
                                     const float* v, const float* lse, const float* delta,
                                     const float* dout, float* dk, float* dv) {
  extern __shared__ float smem[];
  const int64_t hd = s.head_dim, j = blockIdx.x, hk = blockIdx.y, group = s.heads / s.kv_heads;
  float* dk_acc = smem;
  float* dv_acc = dk_acc + hd;
  float* p = dv_acc + hd;
  float* ds = p + kBlock;
  const float* kj = k + (j * s.kv_heads + hk) * hd;
  const float* vj = v + (j * s.kv_heads + hk) * hd;
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) dk_acc[d] = dv_acc[d] = 0.0f;
  int64_t i_start = 0;  // first query that attends key j
  if (s.causal) {
    i_start = s.k_offset + j - s.q_offset;
    i_start = i_start < 0 ? 0 : (i_start > s.nq ? s.nq : i_start);
  }
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
    for (int64_t i0 = i_start; i0 < s.nq; i0 += kBlock) {
      const int64_t i = i0 + threadIdx.x;
      float pi = 0.0f, dsi = 0.0f;
      if (i < s.nq) {
        const float L = lse[h * s.nq + i];
        if (L != -INFINITY) {
          const float* qi = q + (i * s.heads + h) * hd;
          const float* gi = dout + (i * s.heads + h) * hd;
          pi = expf(s.scale * dot(qi, kj, hd) - L);
          dsi = pi * (dot(gi, vj, hd) - delta[h * s.nq + i]);
        }
      }
      __syncthreads();
      p[threadIdx.x] = pi;
      ds[threadIdx.x] = dsi;
      __syncthreads();
      const int64_t ni = s.nq - i0 < kBlock ? s.nq - i0 : kBlock;
      for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
        float sk = 0.0f, sv = 0.0f;
        for (int64_t t = 0; t < ni; ++t) {
          const int64_t row = ((i0 + t) * s.heads + h) * hd + d;
          sv += p[t] * dout[row];
          sk += ds[t] * q[row];
        }
        dv_acc[d] += sv;
        dk_acc[d] += s.scale * sk;
      }
    }
  }
  __syncthreads();
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    dk[(j * s.kv_heads + hk) * hd + d] += dk_acc[d];
    dv[(j * s.kv_heads + hk) * hd + d] += dv_acc[d];
  }
}

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* out, float* lse) {
  check_attention_shape(s, "attention_forward");
  if (s.nq == 0 || detail::tiled_attention_forward(s, q, k, v, out, lse)) return;
  const size_t shared = (s.head_dim + kBlock + 32) * sizeof(float);
  forward_kernel<<<dim3(unsigned(s.nq), unsigned(s.heads)), kBlock, shared, stream()>>>(s, q, k, v, out, lse);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

void attention_merge(int64_t nq, int64_t heads, int64_t head_dim, float* out_a, float* lse_a,
                     const float* out_b, const float* lse_b) {
  if (nq * heads == 0) return;
  merge_kernel<<<detail::grid_for(nq * heads, 256), 256, 0, stream()>>>(nq, heads, head_dim, out_a, lse_a, out_b,
                                                           lse_b);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

void attention_backward_delta(int64_t nq, int64_t heads, int64_t head_dim, const float* out,
                              const float* dout, float* delta) {
  if (nq * heads == 0) return;
  delta_kernel<<<detail::grid_for(nq * heads, 256), 256, 0, stream()>>>(nq, heads, head_dim, out, dout, delta);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* lse, const float* delta, const float* dout, float* dq,
                        float* dk, float* dv) {
  check_attention_shape(s, "attention_backward");
  if (detail::tiled_attention_backward(s, q, k, v, lse, delta, dout, dq, dk, dv)) return;
  if (s.nq > 0) {
    const size_t shared = (s.head_dim + kBlock) * sizeof(float);
    backward_dq_kernel<<<dim3(unsigned(s.nq), unsigned(s.heads)), kBlock, shared, stream()>>>(
        s, q, k, v, lse, delta, dout, dq);
    LOWBAND_CUDA_CHECK_LAUNCH();
  }
  if (s.nk > 0) {
    const size_t shared = (2 * s.head_dim + 2 * kBlock) * sizeof(float);
    backward_dkdv_kernel<<<dim3(unsigned(s.nk), unsigned(s.kv_heads)), kBlock, shared, stream()>>>(
        s, q, k, v, lse, delta, dout, dk, dv);
    LOWBAND_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace lowband::kernels::cuda
