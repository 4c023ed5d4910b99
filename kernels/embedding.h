#pragma once
// Token embedding lookup.
//   ids (n) int32, each in [0, vocab); table (vocab, d) row-major; out (n, d).
//   forward:  out[i, :] = table[ids[i], :]
//   backward: dtable[ids[i], :] += dout[i, :]  (accumulates: zero dtable first
//             for a fresh gradient; repeated ids add up).
// cpu:: throws lowband::InputError naming "ids[i]" for an id out of range; cuda::
// takes device pointers and does not check ids (out-of-range ids are undefined).
#include <cstdint>

namespace lowband::kernels {

namespace cpu {
void embedding_forward(const int32_t* ids, int64_t n, const float* table, int64_t vocab,
                       int64_t d, float* out);
void embedding_backward(const int32_t* ids, int64_t n, const float* dout, int64_t vocab,
                        int64_t d, float* dtable);
}  // namespace cpu

namespace cuda {
void embedding_forward(const int32_t* ids, int64_t n, const float* table, int64_t vocab,
                       int64_t d, float* out);
void embedding_backward(const int32_t* ids, int64_t n, const float* dout, int64_t vocab,
                        int64_t d, float* dtable);
}  // namespace cuda

}  // namespace lowband::kernels
