#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/rmsnorm.h"

namespace lowband::kernels::cuda {

namespace {
constexpr int kThreads = 256;

// One block per row.
__global__ void rmsnorm_forward_kernel(const float* x, const float* w, int64_t n, int64_t d,
                                       float eps, float* y, float* rstd) {
  __shared__ float scratch[32];
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const float* xi = x + i * d;
    float sum_sq = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) sum_sq += xi[j] * xi[j];
    sum_sq = detail::block_sum(sum_sq, scratch);
    const float r = rsqrtf(sum_sq / float(d) + eps);
    if (threadIdx.x == 0) rstd[i] = r;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) y[i * d + j] = xi[j] * r * w[j];
  }
}

// dx, one block per row.
__global__ void rmsnorm_backward_dx_kernel(const float* dy, const float* x, const float* w,
                                           const float* rstd, int64_t n, int64_t d, float* dx) {
  __shared__ float scratch[32];
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const float* dyi = dy + i * d;
    const float* xi = x + i * d;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dot += w[j] * dyi[j] * xi[j];
    dot = detail::block_sum(dot, scratch);  // all reads of dy done before dx (may alias) is written
    const float r = rstd[i];
    const float c = r * r * dot / float(d);
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
      dx[i * d + j] = r * (w[j] * dyi[j] - xi[j] * c);
  }
}

// dw: thread per column, blockIdx.y picks a chunk of rows; chunk sums are added
// atomically (kRowsPerChunk rows each, so few atomics).
constexpr int64_t kRowsPerChunk = 256;
__global__ void rmsnorm_backward_dw_kernel(const float* dy, const float* x, const float* rstd,
                                           int64_t n, int64_t d, float* dw) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  const int64_t begin = int64_t(blockIdx.y) * kRowsPerChunk;
  const int64_t end = min(n, begin + kRowsPerChunk);
  float sum = 0.0f;
  for (int64_t i = begin; i < end; ++i) sum += dy[i * d + j] * x[i * d + j] * rstd[i];
  atomicAdd(dw + j, sum);
}
}  // namespace

void rmsnorm_forward(const float* x, const float* w, int64_t n, int64_t d, float eps, float* y,
                     float* rstd) {
  if (n == 0) return;
  rmsnorm_forward_kernel<<<detail::grid_for(n, 1), kThreads, 0, stream()>>>(x, w, n, d, eps, y, rstd);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t n, int64_t d, float* dx, float* dw) {
  if (n == 0 || d == 0) return;
  // dw first: it reads dy, which dx may overwrite.
  const dim3 grid(detail::grid_for(d, kThreads),
                  static_cast<unsigned>((n + kRowsPerChunk - 1) / kRowsPerChunk));
  rmsnorm_backward_dw_kernel<<<grid, kThreads, 0, stream()>>>(dy, x, rstd, n, d, dw);
  LOWBAND_CUDA_CHECK_LAUNCH();
  rmsnorm_backward_dx_kernel<<<detail::grid_for(n, 1), kThreads, 0, stream()>>>(dy, x, w, rstd, n, d, dx);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

}  // namespace lowband::kernels::cuda
