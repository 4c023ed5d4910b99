#pragma once
// Rotary position embedding, Llama "rotate half" convention.
//   x (n, heads, head_dim) row-major, head_dim even, half = head_dim / 2;
//   positions (n) int64: the global position of each token (not its row index),
//   so context-parallel chunks and zigzag splits rotate by their true positions.
//   For i < half: freq_i = theta^(-2i / head_dim), angle = positions[t] * freq_i,
//     out[i]        = x[i] * cos(angle) - x[i + half] * sin(angle)
//     out[i + half] = x[i + half] * cos(angle) + x[i] * sin(angle)
//   backward is the inverse rotation (angle -> -angle) applied to dout.
// Angles and their sin/cos are computed in double so large positions (1e5+)
// keep fp32 accuracy.
// out may alias x and dx may alias dout. head_dim odd or <= 0 is an InputError.
#include <cstdint>

namespace lowband::kernels {

constexpr float kRopeThetaDefault = 10000.0f;

namespace cpu {
void rope_forward(const float* x, const int64_t* positions, int64_t n, int64_t heads,
                  int64_t head_dim, float* out, float theta = kRopeThetaDefault);
void rope_backward(const float* dout, const int64_t* positions, int64_t n, int64_t heads,
                   int64_t head_dim, float* dx, float theta = kRopeThetaDefault);
}  // namespace cpu

namespace cuda {
void rope_forward(const float* x, const int64_t* positions, int64_t n, int64_t heads,
                  int64_t head_dim, float* out, float theta = kRopeThetaDefault);
void rope_backward(const float* dout, const int64_t* positions, int64_t n, int64_t heads,
                   int64_t head_dim, float* dx, float theta = kRopeThetaDefault);
}  // namespace cuda

}  // namespace lowband::kernels
