#pragma once
// Fused softmax + cross-entropy over the vocabulary, numerically stable (max
// subtracted), with no softmax buffer.
//   logits (n, V) row-major; targets (n) int32 in [0, V), or < 0 to ignore a row.
//   forward: losses (n): losses[i] = logsumexp(logits[i, :]) - logits[i, targets[i]],
//            0 for ignored rows; lse (n): logsumexp of each row (for backward);
//            returns the mean loss over valid rows (0 when there are none).
//   backward: dlogits[i, :] = dloss * (softmax(logits[i, :]) - onehot(targets[i])) / n_valid
//            for valid rows, 0 for ignored rows: the gradient of dloss * mean loss.
//            (With context parallelism pass dloss = n_valid_local / n_valid_global.)
//            dlogits may alias logits (in place).
// A target >= V is an InputError on cpu:: (naming "targets[i]"); cuda:: does not
// check (undefined). cuda:: forward/backward synchronise to count valid rows.
#include <cstdint>

namespace lowband::kernels {

namespace cpu {
float cross_entropy_forward(const float* logits, const int32_t* targets, int64_t n, int64_t V,
                            float* losses, float* lse);
void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                            int64_t n, int64_t V, float* dlogits, float dloss = 1.0f);
}  // namespace cpu

namespace cuda {
float cross_entropy_forward(const float* logits, const int32_t* targets, int64_t n, int64_t V,
                            float* losses, float* lse);
void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                            int64_t n, int64_t V, float* dlogits, float dloss = 1.0f);
}  // namespace cuda

}  // namespace lowband::kernels
