#include "kernels/embedding.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"

namespace lowband::kernels::cpu {

namespace {
void check_ids(const int32_t* ids, int64_t n, int64_t vocab) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw InputError("embedding ids[" + std::to_string(i) + "]",
                       "token id " + std::to_string(ids[i]) + " is outside [0, " +
                           std::to_string(vocab) + ")");
}
}  // namespace

void embedding_forward(const int32_t* ids, int64_t n, const float* table, int64_t vocab,
                       int64_t d, float* out) {
  check_ids(ids, n, vocab);
#pragma omp parallel for schedule(static) if (n * d > 65536)
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * d, table + int64_t(ids[i]) * d, size_t(d) * sizeof(float));
}

void embedding_backward(const int32_t* ids, int64_t n, const float* dout, int64_t vocab,
                        int64_t d, float* dtable) {
  check_ids(ids, n, vocab);
  // Each thread owns a slice of columns and walks every token: no two threads
  // touch the same element, so no atomics and the sum order is deterministic.
#pragma omp parallel if (n * d > 65536)
  {
    const int threads = omp_get_num_threads(), me = omp_get_thread_num();
    // Column slices in multiples of 16 floats (one cache line) to avoid false sharing.
    const int64_t lines = (d + 15) / 16;
    const int64_t begin = std::min(d, lines * me / threads * 16);
    const int64_t end = std::min(d, lines * (me + 1) / threads * 16);
    for (int64_t i = 0; i < n; ++i) {
      float* dst = dtable + int64_t(ids[i]) * d;
      const float* src = dout + i * d;
#pragma omp simd
      for (int64_t j = begin; j < end; ++j) dst[j] += src[j];
    }
  }
}

}  // namespace lowband::kernels::cpu
