#pragma once
// AdamW (decoupled weight decay, Loshchilov & Hutter; same update as PyTorch's
// torch.optim.AdamW) on flat float buffers, and global gradient-norm clipping.
//   params, grads, m (first moment), v (second moment): each (count), m and v
//   zero before step 1. step t >= 1 (bias correction uses beta^t).
//   p <- p - lr * wd * p
//   m <- beta1 m + (1 - beta1) g;   v <- beta2 v + (1 - beta2) g^2
//   p <- p - lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
// global_grad_norm: sqrt(sum g^2), summed in double.
// clip_grad_norm: when norm > max_norm, grads *= max_norm / norm; returns the
// norm before clipping (as torch.nn.utils.clip_grad_norm_ does).
// A step < 1 or a non-positive max_norm is an InputError.
#include <cstdint>

namespace lowband::kernels {

// Defaults are the usual LLM settings (Llama: beta2 0.95); every field is explicit.
struct AdamWConfig {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

namespace cpu {
void adamw_step(float* params, const float* grads, float* m, float* v, int64_t count,
                int64_t step, const AdamWConfig& config);
double global_grad_norm(const float* grads, int64_t count);
double clip_grad_norm(float* grads, int64_t count, double max_norm);
}  // namespace cpu

namespace cuda {
void adamw_step(float* params, const float* grads, float* m, float* v, int64_t count,
                int64_t step, const AdamWConfig& config);
double global_grad_norm(const float* grads, int64_t count);
double clip_grad_norm(float* grads, int64_t count, double max_norm);
}  // namespace cuda

}  // namespace lowband::kernels
