// Top-k and block quantisation on the GPU. Top-k sorts (Thrust, stable, so ties
// keep the lower index first) rather than selecting: O(n log n), simple and
// exactly the CPU's order. Quantisation: one thread block per scale, then one
// thread per output byte, so 4-bit nibbles are packed without races.
#include <thrust/device_ptr.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <string>

#include "common/error.h"
#include "kernels/compress.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"

namespace lowband::kernels::cuda {
namespace {

__global__ void magnitude_kernel(int64_t n, const float* x, float* key) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    key[i] = isnan(x[i]) ? INFINITY : fabsf(x[i]);  // NaN ranks first, as on the CPU
}

__global__ void gather_kernel(int64_t k, const float* x, const int32_t* idx, float* values,
                              int32_t* indices) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < k;
       i += int64_t(gridDim.x) * blockDim.x) {
    indices[i] = idx[i];
    values[i] = x[idx[i]];
  }
}

// Scatters the in-range entries; records the first out-of-range position in *bad.
__global__ void scatter_kernel(int64_t n, int64_t k, const float* values, const int32_t* indices,
                               float* y, unsigned long long* bad) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < k;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int32_t j = indices[i];
    if (j < 0 || j >= n)
      atomicMin(bad, static_cast<unsigned long long>(i));
    else
      y[j] = values[i];
  }
}

__device__ inline int code_of(float x, float scale, int qmax) {
  if (!(scale > 0.0f) || isnan(x)) return 0;
  const float q = rintf(x / scale);  // round half to even, as std::nearbyint
  return int(fminf(fmaxf(q, float(-qmax)), float(qmax)));
}

__global__ void scale_kernel(int64_t n, int64_t block, int qmax, const float* x, float* scales) {
  __shared__ float scratch[32];
  const int64_t b = blockIdx.x, end = (b + 1) * block < n ? (b + 1) * block : n;
  float absmax = 0.0f;
  for (int64_t i = b * block + threadIdx.x; i < end; i += blockDim.x)
    absmax = fmaxf(absmax, fabsf(x[i]));
  absmax = detail::block_max(absmax, scratch);
  if (threadIdx.x == 0) scales[b] = absmax / float(qmax);
}

__global__ void code8_kernel(int64_t n, int64_t block, const float* x, const float* scales,
                             uint8_t* codes) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    codes[i] = uint8_t(int8_t(code_of(x[i], scales[i / block], 127)));
}

__global__ void code4_kernel(int64_t n, int64_t block, const float* x, const float* scales,
                             uint8_t* codes) {
  const int64_t bytes = (n + 1) / 2;
  for (int64_t byte = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; byte < bytes;
       byte += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = 2 * byte;
    const int lo = code_of(x[i], scales[i / block], 7) + 8;
    const int hi = i + 1 < n ? code_of(x[i + 1], scales[(i + 1) / block], 7) + 8 : 8;
    codes[byte] = uint8_t(lo | (hi << 4));
  }
}

__global__ void dequant_kernel(int64_t n, int bits, int64_t block, const uint8_t* codes,
                               const float* scales, float* y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int code =
        bits == 8 ? int(int8_t(codes[i])) : int((codes[i / 2] >> (4 * (i % 2))) & 0xF) - 8;
    y[i] = float(code) * scales[i / block];
  }
}

}  // namespace

void topk_compress(int64_t n, int64_t k, const float* x, float* values, int32_t* indices) {
  check_topk(n, k, "topk_compress");
  if (k == 0) return;
  thrust::device_vector<float> key(n);
  thrust::device_vector<int32_t> order(n);
  magnitude_kernel<<<detail::grid_for(n, 256), 256, 0, stream()>>>(n, x, thrust::raw_pointer_cast(key.data()));
  LOWBAND_CUDA_CHECK_LAUNCH();
  thrust::sequence(thrust::device, order.begin(), order.end());
  thrust::stable_sort_by_key(thrust::device, key.begin(), key.end(), order.begin(),
                             thrust::greater<float>());
  thrust::sort(thrust::device, order.begin(), order.begin() + k);
  gather_kernel<<<detail::grid_for(k, 256), 256, 0, stream()>>>(k, x, thrust::raw_pointer_cast(order.data()),
                                                   values, indices);
  LOWBAND_CUDA_CHECK_LAUNCH();
  LOWBAND_CUDA_CHECK(cudaDeviceSynchronize());  // order is freed on return
}

void topk_decompress(int64_t n, int64_t k, const float* values, const int32_t* indices, float* y) {
  check_topk(n, k, "topk_decompress");
  if (n > 0) LOWBAND_CUDA_CHECK(cudaMemsetAsync(y, 0, size_t(n) * sizeof(float), stream()));
  if (k == 0) return;
  thrust::device_vector<unsigned long long> bad(1, static_cast<unsigned long long>(k));
  scatter_kernel<<<detail::grid_for(k, 256), 256, 0, stream()>>>(n, k, values, indices, y,
                                                    thrust::raw_pointer_cast(bad.data()));
  LOWBAND_CUDA_CHECK_LAUNCH();
  const unsigned long long first_bad = bad[0];  // synchronises
  if (first_bad < static_cast<unsigned long long>(k))
    throw InputError("topk_decompress.indices[" + std::to_string(first_bad) + "]",
                     "index outside [0, " + std::to_string(n) + ")");
}

void quantize_blockwise(int64_t n, int bits, int64_t block, const float* x, uint8_t* codes,
                        float* scales) {
  check_quantize(n, bits, block, "quantize_blockwise");
  if (n == 0) return;
  const int64_t blocks = quantized_scale_count(n, block);
  scale_kernel<<<unsigned(blocks), 256, 0, stream()>>>(n, block, (1 << (bits - 1)) - 1, x, scales);
  LOWBAND_CUDA_CHECK_LAUNCH();
  if (bits == 8)
    code8_kernel<<<detail::grid_for(n, 256), 256, 0, stream()>>>(n, block, x, scales, codes);
  else
    code4_kernel<<<detail::grid_for((n + 1) / 2, 256), 256, 0, stream()>>>(n, block, x, scales, codes);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

void dequantize_blockwise(int64_t n, int bits, int64_t block, const uint8_t* codes,
                          const float* scales, float* y) {
  check_quantize(n, bits, block, "dequantize_blockwise");
  if (n == 0) return;
  dequant_kernel<<<detail::grid_for(n, 256), 256, 0, stream()>>>(n, bits, block, codes, scales, y);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

}  // namespace lowband::kernels::cuda
