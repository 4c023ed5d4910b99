#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/swiglu.h"

namespace lowband::kernels::cuda {

namespace {
__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void swiglu_forward_kernel(const float* a, const float* b, int64_t count, float* out) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float ai = a[i];
    out[i] = ai * sigmoid(ai) * b[i];
  }
}

__global__ void swiglu_backward_kernel(const float* dout, const float* a, const float* b,
                                       int64_t count, float* da, float* db) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float ai = a[i], bi = b[i], gi = dout[i];
    const float s = sigmoid(ai);
    da[i] = gi * bi * s * (1.0f + ai * (1.0f - s));
    db[i] = gi * ai * s;
  }
}
}  // namespace

void swiglu_forward(const float* a, const float* b, int64_t n, int64_t f, float* out) {
  const int64_t count = n * f;
  if (count == 0) return;
  swiglu_forward_kernel<<<detail::grid_for(count, 256), 256, 0, stream()>>>(a, b, count, out);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

void swiglu_backward(const float* dout, const float* a, const float* b, int64_t n, int64_t f,
                     float* da, float* db) {
  const int64_t count = n * f;
  if (count == 0) return;
  swiglu_backward_kernel<<<detail::grid_for(count, 256), 256, 0, stream()>>>(dout, a, b, count, da, db);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

}  // namespace lowband::kernels::cuda
