#include "kernels/rmsnorm.h"

#include <omp.h>

#include <cmath>
#include <vector>

namespace lowband::kernels::cpu {

void rmsnorm_forward(const float* x, const float* w, int64_t n, int64_t d, float eps, float* y,
                     float* rstd) {
#pragma omp parallel for schedule(static) if (n * d > 32768)
  for (int64_t i = 0; i < n; ++i) {
    const float* xi = x + i * d;
    float* yi = y + i * d;
    float sum_sq = 0.0f;
#pragma omp simd reduction(+ : sum_sq)
    for (int64_t j = 0; j < d; ++j) sum_sq += xi[j] * xi[j];
    const float r = 1.0f / std::sqrt(sum_sq / float(d) + eps);
    rstd[i] = r;
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) yi[j] = xi[j] * r * w[j];
  }
}

void rmsnorm_backward(const float* dy, const float* x, const float* w, const float* rstd,
                      int64_t n, int64_t d, float* dx, float* dw) {
  // dw is a sum over rows: each thread sums its rows into its own partial, and
  // the partials are added in thread order afterwards (deterministic).
  const int max_threads = omp_get_max_threads();
  std::vector<float> partial(size_t(max_threads) * size_t(d), 0.0f);
  int used_threads = 1;
#pragma omp parallel if (n * d > 32768)
  {
    const int me = omp_get_thread_num();
#pragma omp single
    used_threads = omp_get_num_threads();
    float* dw_me = partial.data() + size_t(me) * size_t(d);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const float* dyi = dy + i * d;
      const float* xi = x + i * d;
      float* dxi = dx + i * d;
      const float r = rstd[i];
      float dot = 0.0f;  // sum_j w*dy*x
#pragma omp simd reduction(+ : dot)
      for (int64_t j = 0; j < d; ++j) dot += w[j] * dyi[j] * xi[j];
      const float c = r * r * dot / float(d);
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) {
        const float xj = xi[j], dyj = dyi[j];  // read before dx (may alias dy) is written
        dw_me[j] += dyj * xj * r;
        dxi[j] = r * (w[j] * dyj - xj * c);
      }
    }
  }
  for (int t = 0; t < used_threads; ++t) {
    const float* p = partial.data() + size_t(t) * size_t(d);
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) dw[j] += p[j];
  }
}

}  // namespace lowband::kernels::cpu
