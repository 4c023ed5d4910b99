// Shape checks and FLOP conventions shared by the CPU and CUDA attention.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace lowband::kernels {

void check_attention_shape(const AttentionShape& s, const char* where) {
  const std::string w(where);
  if (s.nq < 0) throw InputError(w + ".nq", "must be >= 0, got " + std::to_string(s.nq));
  if (s.nk < 0) throw InputError(w + ".nk", "must be >= 0, got " + std::to_string(s.nk));
  if (s.heads <= 0) throw InputError(w + ".heads", "must be > 0, got " + std::to_string(s.heads));
  if (s.kv_heads <= 0 || s.heads % s.kv_heads != 0)
    throw InputError(w + ".kv_heads", "must divide heads (" + std::to_string(s.heads) + "), got " +
                                          std::to_string(s.kv_heads));
  if (s.head_dim <= 0)
    throw InputError(w + ".head_dim", "must be > 0, got " + std::to_string(s.head_dim));
  if (!std::isfinite(s.scale)) throw InputError(w + ".scale", "must be finite");
}

int64_t attention_unmasked_pairs(const AttentionShape& s) {
  if (!s.causal) return s.nq * s.nk;
  int64_t pairs = 0;
  for (int64_t i = 0; i < s.nq; ++i)
    pairs += std::clamp<int64_t>(s.q_offset + i - s.k_offset + 1, 0, s.nk);
  return pairs;
}

double attention_forward_flops(const AttentionShape& s) {
  return 4.0 * double(attention_unmasked_pairs(s)) * double(s.head_dim) * double(s.heads);
}

double attention_backward_flops(const AttentionShape& s) {
  return 2.5 * attention_forward_flops(s);
}

}  // namespace lowband::kernels
