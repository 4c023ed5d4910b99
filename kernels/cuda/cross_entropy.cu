#include <vector>

#include "kernels/cross_entropy.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/device.h"
#include "kernels/cuda/reduce.cuh"

namespace lowband::kernels::cuda {

namespace {
constexpr int kThreads = 512;

// One block per row: each thread keeps an online (max, sum of exp) over its
// strided elements; the block merges them.
__global__ void cross_entropy_forward_kernel(const float* logits, const int32_t* targets,
                                             int64_t n, int64_t V, float* losses, float* lse) {
  __shared__ float scratch[32];
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const float* row = logits + i * V;
    float m = -INFINITY, s = 0.0f;
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
      const float x = row[j];
      if (x > m) {
        s = s * expf(m - x) + 1.0f;
        m = x;
      } else if (m != -INFINITY) {  // x = m = -inf (a masked logit) adds nothing
        s += expf(x - m);
      }
    }
    const float row_max = detail::block_max(m, scratch);
    s = m == -INFINITY ? 0.0f : s * expf(m - row_max);
    s = detail::block_sum(s, scratch);
    if (threadIdx.x == 0) {
      const float l = row_max + logf(s);
      lse[i] = l;
      const int32_t t = targets[i];
      losses[i] = t >= 0 ? l - row[t] : 0.0f;
    }
  }
}

__global__ void cross_entropy_backward_kernel(const float* logits, const int32_t* targets,
                                              const float* lse, int64_t n, int64_t V,
                                              float* dlogits, float scale) {
  for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
    const int32_t t = targets[i];
    const float l = lse[i];
    const float* row = logits + i * V;
    float* drow = dlogits + i * V;
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
      const float g = t < 0 ? 0.0f : scale * (expf(row[j] - l) - (j == t ? 1.0f : 0.0f));
      drow[j] = g;  // same element read then written: in place is safe
    }
  }
}

int64_t count_valid_rows(const int32_t* targets_device, int64_t n) {
  std::vector<int32_t> host(static_cast<size_t>(n));
  copy_to_host(host.data(), targets_device, size_t(n) * sizeof(int32_t));
  int64_t valid = 0;
  for (int32_t t : host) valid += t >= 0;
  return valid;
}
}  // namespace

float cross_entropy_forward(const float* logits, const int32_t* targets, int64_t n, int64_t V,
                            float* losses, float* lse) {
  if (n == 0) return 0.0f;
  cross_entropy_forward_kernel<<<detail::grid_for(n, 1), kThreads, 0, stream()>>>(logits, targets, n, V,
                                                                     losses, lse);
  LOWBAND_CUDA_CHECK_LAUNCH();
  // The mean over valid rows is summed on the host in double (n is small).
  std::vector<float> host_losses(static_cast<size_t>(n));
  copy_to_host(host_losses.data(), losses, size_t(n) * sizeof(float));
  const int64_t valid = count_valid_rows(targets, n);
  double total = 0.0;
  for (float l : host_losses) total += double(l);
  return valid > 0 ? float(total / double(valid)) : 0.0f;
}

void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                            int64_t n, int64_t V, float* dlogits, float dloss) {
  if (n == 0) return;
  const int64_t valid = count_valid_rows(targets, n);
  const float scale = valid > 0 ? dloss / float(valid) : 0.0f;
  cross_entropy_backward_kernel<<<detail::grid_for(n, 1), kThreads, 0, stream()>>>(logits, targets, lse, n, V,
                                                                      dlogits, scale);
  LOWBAND_CUDA_CHECK_LAUNCH();
}

}  // namespace lowband::kernels::cuda
