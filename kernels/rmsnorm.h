#pragma once
// RMSNorm (Llama): y = x / sqrt(mean(x^2) + eps) * w, per row.
//   x (n, d) row-major; w (d); y (n, d); rstd (n) = 1 / sqrt(mean(x^2) + eps),
//   saved by forward for backward.
//   backward: dy (n, d) -> dx (n, d) written;  dw (d) accumulated (+=), so one dw
//   can collect several calls (zero it first for a fresh gradient).
//   dx = rstd * (w*dy - x * rstd^2 * mean(w*dy*x)),  dw += sum_rows dy * x * rstd.
// y may alias x; dx may alias dy.
#include <cstdint>

namespace lowband::kernels {

namespace cpu {
void rmsnorm_forward(const float* x, const float* w, int64_t n, int64_t d, float eps, float* y,
                     float* rstd);
void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t n, int64_t d, float* dx, float* dw);
}  // namespace cpu

namespace cuda {
void rmsnorm_forward(const float* x, const float* w, int64_t n, int64_t d, float eps, float* y,
                     float* rstd);
void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t n, int64_t d, float* dx, float* dw);
}  // namespace cuda

}  // namespace lowband::kernels
