#include <cmath>
#include <string>

#include "common/error.h"
#include "kernels/adamw.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"

namespace lowband::kernels::cuda {

namespace {
constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v,
                             int64_t count, float b1, float b2, float eps, float decay,
                             float step_size, float inv_sqrt_bc2) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = grads[i];
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    params[i] = params[i] * decay - step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + eps);
  }
}

// Per-block partial sums of squares in double; the host adds the partials.
__global__ void sum_sq_kernel(const float* grads, int64_t count, double* partial) {
  __shared__ double scratch[32];
  double s = 0.0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    s += double(grads[i]) * double(grads[i]);
  s = detail::block_sum(s, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void scale_kernel(float* grads, int64_t count, float scale) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    grads[i] *= scale;
}
}  // namespace

void adamw_step(float* params, const float* grads, float* m, float* v, int64_t count,
                int64_t step, const AdamWConfig& config) {
  if (step < 1) throw InputError("adamw step", "must be >= 1, got " + std::to_string(step));
  if (count == 0) return;
  const double bc1 = 1.0 - std::pow(double(config.beta1), double(step));
  const double bc2 = 1.0 - std::pow(double(config.beta2), double(step));
  adamw_kernel<<<detail::grid_for(count, kThreads), kThreads, 0, stream()>>>(
      params, grads, m, v, count, config.beta1, config.beta2, config.eps,
      1.0f - config.lr * config.weight_decay, float(double(config.lr) / bc1),
      float(1.0 / std::sqrt(bc2)));
  LOWBAND_CUDA_CHECK_LAUNCH();
}

double global_grad_norm(const float* grads, int64_t count) {
  if (count == 0) return 0.0;
  const unsigned blocks = detail::grid_for(count, kThreads, kMaxBlocks);
  double* partial = nullptr;
  LOWBAND_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&partial),
                                     blocks * sizeof(double), stream()));
  sum_sq_kernel<<<blocks, kThreads, 0, stream()>>>(grads, count, partial);
  LOWBAND_CUDA_CHECK_LAUNCH();
  double host[kMaxBlocks];
  LOWBAND_CUDA_CHECK(cudaMemcpyAsync(host, partial, blocks * sizeof(double), cudaMemcpyDeviceToHost, stream()));
  LOWBAND_CUDA_CHECK(cudaStreamSynchronize(stream()));
  LOWBAND_CUDA_CHECK(cudaFreeAsync(partial, stream()));
  double sum_sq = 0.0;
  for (unsigned b = 0; b < blocks; ++b) sum_sq += host[b];
  return std::sqrt(sum_sq);
}

double clip_grad_norm(float* grads, int64_t count, double max_norm) {
  if (!(max_norm > 0.0))
    throw InputError("clip_grad_norm max_norm", "must be > 0, got " + std::to_string(max_norm));
  const double norm = global_grad_norm(grads, count);
  if (norm > max_norm) {
    scale_kernel<<<detail::grid_for(count, kThreads), kThreads, 0, stream()>>>(grads, count,
                                                                  float(max_norm / norm));
    LOWBAND_CUDA_CHECK_LAUNCH();
  }
  return norm;
}

}  // namespace lowband::kernels::cuda
