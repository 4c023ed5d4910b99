#pragma once
// Tiled (flash-attention 2 style) CUDA attention for head_dim <= 128, in fp32
// on the CUDA cores (tensor-core TF32 would miss the 1e-5 agreement with the
// CPU). Each returns false, launching nothing, when the shape is outside what
// the tiles cover; attention.cu then runs its plain kernels.
#include "kernels/attention.h"

namespace lowband::kernels::cuda::detail {

bool tiled_attention_forward(const AttentionShape& s, const float* q, const float* k,
                             const float* v, float* out, float* lse);

bool tiled_attention_backward(const AttentionShape& s, const float* q, const float* k,
                              const float* v, const float* lse, const float* delta,
                              const float* dout, float* dq, float* dk, float* dv);

}  // namespace lowband::kernels::cuda::detail
