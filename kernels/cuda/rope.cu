#include <string>

#include "common/error.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/context.cuh"
#include "kernels/cuda/reduce.cuh"
#include "kernels/rope.h"

namespace lowband::kernels::cuda {

namespace {
// One thread per (token, head, i < half) pair; angle in double as on the CPU.
__global__ void rope_kernel(const float* in, const int64_t* positions, int64_t n, int64_t heads,
                            int64_t head_dim, float* out, double log_theta, double sign) {
  const int64_t half = head_dim / 2;
  const int64_t pairs = n * heads * half;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = p % half;
    const int64_t row = p / half;  // token * heads + head
    const int64_t t = row / heads;
    const double inv_freq = exp(-2.0 * double(i) / double(head_dim) * log_theta);
    double s, c;
    sincos(double(positions[t]) * inv_freq, &s, &c);
    const float cf = float(c), sf = float(sign * s);
    const float x1 = in[row * head_dim + i], x2 = in[row * head_dim + i + half];
    out[row * head_dim + i] = x1 * cf - x2 * sf;
    out[row * head_dim + i + half] = x2 * cf + x1 * sf;
  }
}

void rope_launch(const float* in, const int64_t* positions, int64_t n, int64_t heads,
                 int64_t head_dim, float* out, float theta, double sign, const char* name) {
  if (head_dim <= 0 || head_dim % 2 != 0)
    throw InputError(std::string(name) + " head_dim",
                     "must be even and positive, got " + std::to_string(head_dim));
  if (!(theta > 1.0f))
    throw InputError(std::string(name) + " theta", "must be > 1, got " + std::to_string(theta));
  const int64_t pairs = n * heads * (head_dim / 2);
  if (pairs == 0) return;
  rope_kernel<<<detail::grid_for(pairs, 256), 256, 0, stream()>>>(in, positions, n, heads, head_dim, out,
                                                     log(double(theta)), sign);
  LOWBAND_CUDA_CHECK_LAUNCH();
}
}  // namespace

void rope_forward(const float* x, const int64_t* positions, int64_t n, int64_t heads,
                  int64_t head_dim, float* out, float theta) {
  rope_launch(x, positions, n, heads, head_dim, out, theta, 1.0, "rope_forward");
}

void rope_backward(const float* dout, const int64_t* positions, int64_t n, int64_t heads,
                   int64_t head_dim, float* dx, float theta) {
  rope_launch(dout, positions, n, heads, head_dim, dx, theta, -1.0, "rope_backward");
}

}  // namespace lowband::kernels::cuda
