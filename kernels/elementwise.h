#pragma once
// In-place element-wise updates over count floats:
//   add_inplace:   y += x        (residual adds, summing replicas' gradients)
//   scale_inplace: y *= alpha    (rescaling a gradient)
#include <cstdint>

namespace lowband::kernels {
namespace cpu {
void add_inplace(float* y, const float* x, int64_t count);
void scale_inplace(float* y, float alpha, int64_t count);
}  // namespace cpu
namespace cuda {
void add_inplace(float* y, const float* x, int64_t count);
void scale_inplace(float* y, float alpha, int64_t count);
}  // namespace cuda
}  // namespace lowband::kernels
