#include "kernels/adamw.h"

#include <cmath>
#include <string>

#include "common/error.h"

namespace lowband::kernels::cpu {

void adamw_step(float* params, const float* grads, float* m, float* v, int64_t count,
                int64_t step, const AdamWConfig& config) {
  if (step < 1) throw InputError("adamw step", "must be >= 1, got " + std::to_string(step));
  // Bias corrections in double: beta^t loses digits in float for large t.
  const double bc1 = 1.0 - std::pow(double(config.beta1), double(step));
  const double bc2 = 1.0 - std::pow(double(config.beta2), double(step));
  const float step_size = float(double(config.lr) / bc1);
  const float inv_sqrt_bc2 = float(1.0 / std::sqrt(bc2));
  const float decay = 1.0f - config.lr * config.weight_decay;
  const float b1 = config.beta1, b2 = config.beta2, eps = config.eps;
#pragma omp parallel for simd schedule(static) if (count > 65536)
  for (int64_t i = 0; i < count; ++i) {
    const float g = grads[i];
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    params[i] = params[i] * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
  }
}

double global_grad_norm(const float* grads, int64_t count) {
  double sum_sq = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : sum_sq) if (count > 65536)
  for (int64_t i = 0; i < count; ++i) sum_sq += double(grads[i]) * double(grads[i]);
  return std::sqrt(sum_sq);
}

double clip_grad_norm(float* grads, int64_t count, double max_norm) {
  if (!(max_norm > 0.0))
    throw InputError("clip_grad_norm max_norm", "must be > 0, got " + std::to_string(max_norm));
  const double norm = global_grad_norm(grads, count);
  if (norm > max_norm) {
    const float scale = float(max_norm / norm);
#pragma omp parallel for simd schedule(static) if (count > 65536)
    for (int64_t i = 0; i < count; ++i) grads[i] *= scale;
  }
  return norm;
}

}  // namespace lowband::kernels::cpu
