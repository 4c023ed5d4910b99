#pragma once
// y += x over count floats (the residual adds of the model's backward).
#include <cstdint>

namespace lowband::kernels {
namespace cpu {
void add_inplace(float* y, const float* x, int64_t count);
}  // namespace cpu
namespace cuda {
void add_inplace(float* y, const float* x, int64_t count);
}  // namespace cuda
}  // namespace lowband::kernels
