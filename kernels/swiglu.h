#pragma once
// SwiGLU gate: out = silu(a) * b, silu(a) = a * sigmoid(a).
//   a (gate) and b (up), out: each (n, f) row-major (treated as n*f elements).
//   backward: da = dout * b * sigmoid(a) * (1 + a * (1 - sigmoid(a))),
//             db = dout * silu(a)   (both written, not accumulated).
// Element-wise, each element read before it is written: out may alias a or b,
// da may alias a and db may alias b (in place).
#include <cstdint>

namespace lowband::kernels {

namespace cpu {
void swiglu_forward(const float* a, const float* b, int64_t n, int64_t f, float* out);
void swiglu_backward(const float* dout, const float* a, const float* b, int64_t n, int64_t f,
                     float* da, float* db);
}  // namespace cpu

namespace cuda {
void swiglu_forward(const float* a, const float* b, int64_t n, int64_t f, float* out);
void swiglu_backward(const float* dout, const float* a, const float* b, int64_t n, int64_t f,
                     float* da, float* db);
}  // namespace cuda

}  // namespace lowband::kernels
