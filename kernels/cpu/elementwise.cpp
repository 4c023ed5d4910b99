#include "kernels/elementwise.h"

namespace lowband::kernels::cpu {

void add_inplace(float* y, const float* x, int64_t count) {
#pragma omp parallel for simd schedule(static) if (count > 65536)
  for (int64_t i = 0; i < count; ++i) y[i] += x[i];
}

void scale_inplace(float* y, float alpha, int64_t count) {
#pragma omp parallel for simd schedule(static) if (count > 65536)
  for (int64_t i = 0; i < count; ++i) y[i] *= alpha;
}

}  // namespace lowband::kernels::cpu
