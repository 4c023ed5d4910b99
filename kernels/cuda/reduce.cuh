#pragma once
// Warp and block reductions shared by the row kernels (rmsnorm, cross_entropy).
// Block sizes are multiples of 32 and at most 1024.
#include <cuda_runtime.h>

namespace lowband::kernels::cuda::detail {

template <typename T>
__device__ inline T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the block; every thread gets the result. `scratch` holds 32 values.
template <typename T>
__device__ inline T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? scratch[lane] : T(0);
  return warp_sum(v);
}

__device__ inline float block_max(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

inline unsigned grid_for(int64_t count, int threads, int64_t max_blocks = 65535) {
  int64_t blocks = (count + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;  // kernels use grid-stride loops
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace lowband::kernels::cuda::detail
