#include "kernels/swiglu.h"

#include "kernels/cpu/vec_math.h"

namespace lowband::kernels::cpu {

using detail::sigmoid_f32;

void swiglu_forward(const float* a, const float* b, int64_t n, int64_t f, float* out) {
  const int64_t count = n * f;
#pragma omp parallel for simd schedule(static) if (count > 65536)
  for (int64_t i = 0; i < count; ++i) {
    const float ai = a[i];
    out[i] = ai * sigmoid_f32(ai) * b[i];
  }
}

void swiglu_backward(const float* dout, const float* a, const float* b, int64_t n, int64_t f,
                     float* da, float* db) {
  const int64_t count = n * f;
#pragma omp parallel for simd schedule(static) if (count > 65536)
  for (int64_t i = 0; i < count; ++i) {
    const float ai = a[i], bi = b[i], gi = dout[i];  // all read before da/db are written
    const float s = sigmoid_f32(ai);
    da[i] = gi * bi * s * (1.0f + ai * (1.0f - s));
    db[i] = gi * ai * s;
  }
}

}  // namespace lowband::kernels::cpu
