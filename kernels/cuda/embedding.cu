#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/embedding.h"

namespace lowband::kernels::cuda {

namespace {
__global__ void embedding_forward_kernel(const int32_t* ids, int64_t n, const float* table,
                                         int64_t d, float* out) {
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const float* src = table + int64_t(ids[i]) * d;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) out[i * d + j] = src[j];
  }
}

__global__ void embedding_backward_kernel(const int32_t* ids, int64_t n, const float* dout,
                                          int64_t d, float* dtable) {
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    float* dst = dtable + int64_t(ids[i]) * d;
    // Repeated ids hit the same row from different blocks: atomics.
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) atomicAdd(dst + j, dout[i * d + j]);
  }
}
}  // namespace

void embedding_forward(const int32_t* ids, int64_t n, const float* table, int64_t /*vocab*/,
                       int64_t d, float* out) {
  if (n == 0 || d == 0) return;
  embedding_forward_kernel<<<detail::grid_for(n, 1), 256, 0, stream()>>>(ids, n, table, d, out);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

void embedding_backward(const int32_t* ids, int64_t n, const float* dout, int64_t /*vocab*/,
                        int64_t d, float* dtable) {
  if (n == 0 || d == 0) return;
  embedding_backward_kernel<<<detail::grid_for(n, 1), 256, 0, stream()>>>(ids, n, dout, d, dtable);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

}  // namespace lowband::kernels::cuda
