// Top-k sparsification and block quantisation on the CPU.
#include "kernels/compress.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "common/error.h"

namespace lowband::kernels::cpu {
namespace {

// Rank key: |x|, with NaN above everything.
inline float magnitude(float x) { return std::isnan(x) ? INFINITY : std::fabs(x); }

inline int qmax_of(int bits) { return (1 << (bits - 1)) - 1; }

// round(x / scale) clamped to [−qmax, qmax]; 0 for a zero scale or a NaN x.
inline int code_of(float x, float scale, int qmax) {
  if (!(scale > 0.0f) || std::isnan(x)) return 0;
  const float q = std::nearbyint(x / scale);
  return int(std::clamp(q, float(-qmax), float(qmax)));
}

}  // namespace

void topk_compress(int64_t n, int64_t k, const float* x, float* values, int32_t* indices) {
  check_topk(n, k, "topk_compress");
  if (k == 0) return;
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto before = [x](int32_t a, int32_t b) {
    const float ma = magnitude(x[a]), mb = magnitude(x[b]);
    return ma > mb || (ma == mb && a < b);  // a strict total order: ties by index
  };
  std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), before);
  std::sort(order.begin(), order.begin() + k);
  for (int64_t i = 0; i < k; ++i) {
    indices[i] = order[i];
    values[i] = x[order[i]];
  }
}

void topk_decompress(int64_t n, int64_t k, const float* values, const int32_t* indices, float* y) {
  check_topk(n, k, "topk_decompress");
  std::fill(y, y + n, 0.0f);
  for (int64_t i = 0; i < k; ++i) {
    if (indices[i] < 0 || indices[i] >= n)
      throw InputError(
          "topk_decompress.indices[" + std::to_string(i) + "]",
          "index " + std::to_string(indices[i]) + " outside [0, " + std::to_string(n) + ")");
    y[indices[i]] = values[i];
  }
}

void quantize_blockwise(int64_t n, int bits, int64_t block, const float* x, uint8_t* codes,
                        float* scales) {
  check_quantize(n, bits, block, "quantize_blockwise");
  const int qmax = qmax_of(bits);
  const int64_t blocks = quantized_scale_count(n, block);
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t b = 0; b < blocks; ++b) {
    float absmax = 0.0f;
    for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i)
      absmax = std::fmax(absmax, std::fabs(x[i]));
    scales[b] = absmax / float(qmax);
  }
  if (bits == 8) {
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (int64_t i = 0; i < n; ++i)
      codes[i] = uint8_t(int8_t(code_of(x[i], scales[i / block], qmax)));
  } else {
    const int64_t bytes = quantized_code_bytes(n, 4);
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (int64_t byte = 0; byte < bytes; ++byte) {
      const int64_t i = 2 * byte;
      const int lo = code_of(x[i], scales[i / block], qmax) + 8;
      const int hi = i + 1 < n ? code_of(x[i + 1], scales[(i + 1) / block], qmax) + 8 : 8;
      codes[byte] = uint8_t(lo | (hi << 4));
    }
  }
}

void dequantize_blockwise(int64_t n, int bits, int64_t block, const uint8_t* codes,
                          const float* scales, float* y) {
  check_quantize(n, bits, block, "dequantize_blockwise");
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    const int code =
        bits == 8 ? int(int8_t(codes[i])) : int((codes[i / 2] >> (4 * (i % 2))) & 0xF) - 8;
    y[i] = float(code) * scales[i / block];
  }
}

}  // namespace lowband::kernels::cpu
