#include "kernels/cross_entropy.h"

#include <cmath>
#include <limits>
#include <string>

#include "common/error.h"
#include "kernels/cpu/vec_math.h"

namespace lowband::kernels::cpu {

namespace {
// Counts rows with a target in [0, V); a target >= V is bad input.
int64_t count_valid(const int32_t* targets, int64_t n, int64_t V, const char* name) {
  int64_t valid = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (targets[i] >= V)
      throw InputError(std::string(name) + " targets[" + std::to_string(i) + "]",
                       "target " + std::to_string(targets[i]) + " is >= vocabulary size " +
                           std::to_string(V));
    valid += targets[i] >= 0;
  }
  return valid;
}

// logsumexp of one row: a max pass, then a sum of exp(x - max) pass (the row
// stays in L2 between them).
float row_logsumexp(const float* row, int64_t V) {
  float mx = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < V; ++j) mx = row[j] > mx ? row[j] : mx;
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < V; ++j) sum += detail::exp_f32(row[j] - mx);
  return mx + std::log(sum);
}
}  // namespace

float cross_entropy_forward(const float* logits, const int32_t* targets, int64_t n, int64_t V,
                            float* losses, float* lse) {
  const int64_t valid = count_valid(targets, n, V, "cross_entropy_forward");
  double total = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (n * V > 32768)
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * V;
    const float l = row_logsumexp(row, V);
    lse[i] = l;
    const int32_t t = targets[i];
    losses[i] = t >= 0 ? l - row[t] : 0.0f;
    total += double(losses[i]);
  }
  return valid > 0 ? float(total / double(valid)) : 0.0f;
}

void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                            int64_t n, int64_t V, float* dlogits, float dloss) {
  const int64_t valid = count_valid(targets, n, V, "cross_entropy_backward");
  const float scale = valid > 0 ? dloss / float(valid) : 0.0f;
#pragma omp parallel for schedule(static) if (n * V > 32768)
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits + i * V;
    float* drow = dlogits + i * V;
    const int32_t t = targets[i];
    if (t < 0) {
#pragma omp simd
      for (int64_t j = 0; j < V; ++j) drow[j] = 0.0f;
      continue;
    }
    const float l = lse[i];
#pragma omp simd
    for (int64_t j = 0; j < V; ++j) drow[j] = scale * detail::exp_f32(row[j] - l);
    drow[t] -= scale;
  }
}

}  // namespace lowband::kernels::cpu
