#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/elementwise.h"

namespace lowband::kernels::cuda {

namespace {
__global__ void add_inplace_kernel(float* y, const float* x, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}
__global__ void scale_inplace_kernel(float* y, float alpha, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] *= alpha;
}
}  // namespace

void add_inplace(float* y, const float* x, int64_t count) {
  if (count == 0) return;
  add_inplace_kernel<<<detail::grid_for(count, 256), 256, 0, stream()>>>(y, x, count);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

void scale_inplace(float* y, float alpha, int64_t count) {
  if (count == 0) return;
  scale_inplace_kernel<<<detail::grid_for(count, 256), 256, 0, stream()>>>(y, alpha, count);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

}  // namespace lowband::kernels::cuda
