#include "kernels/rope.h"

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/vec_math.h"

namespace lowband::kernels::cpu {

namespace {
// sign = +1 rotates by +angle (forward), -1 by -angle (backward, the inverse).
void rope_rotate(const float* in, const int64_t* positions, int64_t n, int64_t heads,
                 int64_t head_dim, float* out, float theta, float sign, const char* name) {
  if (head_dim <= 0 || head_dim % 2 != 0)
    throw InputError(std::string(name) + " head_dim",
                     "must be even and positive, got " + std::to_string(head_dim));
  if (!(theta > 1.0f))
    throw InputError(std::string(name) + " theta", "must be > 1, got " + std::to_string(theta));
  const int64_t half = head_dim / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inv_freq[size_t(i)] = std::pow(double(theta), -2.0 * double(i) / double(head_dim));
#pragma omp parallel if (n * heads * head_dim > 32768)
  {
    // cos/sin of one token, shared by all its heads.
    std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
#pragma omp for schedule(static)
    for (int64_t t = 0; t < n; ++t) {
      const double pos = double(positions[t]);
      const double* f = inv_freq.data();
      float* c = cos_t.data();
      float* s = sin_t.data();
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        double sin_a, cos_a;
        detail::sincos_f64(pos * f[i], sin_a, cos_a);
        c[i] = float(cos_a);
        s[i] = sign * float(sin_a);
      }
      for (int64_t h = 0; h < heads; ++h) {
        const float* xi = in + (t * heads + h) * head_dim;
        float* yi = out + (t * heads + h) * head_dim;
#pragma omp simd
        for (int64_t i = 0; i < half; ++i) {
          const float x1 = xi[i], x2 = xi[i + half];  // read both before an in-place write
          yi[i] = x1 * c[i] - x2 * s[i];
          yi[i + half] = x2 * c[i] + x1 * s[i];
        }
      }
    }
  }
}
}  // namespace

void rope_forward(const float* x, const int64_t* positions, int64_t n, int64_t heads,
                  int64_t head_dim, float* out, float theta) {
  rope_rotate(x, positions, n, heads, head_dim, out, theta, 1.0f, "rope_forward");
}

void rope_backward(const float* dout, const int64_t* positions, int64_t n, int64_t heads,
                   int64_t head_dim, float* dx, float theta) {
  rope_rotate(dout, positions, n, heads, head_dim, dx, theta, -1.0f, "rope_backward");
}

}  // namespace lowband::kernels::cpu
