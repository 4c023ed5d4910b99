// Message sizes and argument checks shared by the CPU and CUDA compressors.
#include "kernels/compress.h"

#include <limits>
#include <string>

#include "common/error.h"

namespace lowband::kernels {

int64_t topk_message_bytes(int64_t k) { return k * int64_t(sizeof(float) + sizeof(int32_t)); }

int64_t quantized_code_bytes(int64_t n, int bits) { return (n * bits + 7) / 8; }

int64_t quantized_scale_count(int64_t n, int64_t block) { return (n + block - 1) / block; }

int64_t quantized_message_bytes(int64_t n, int bits, int64_t block) {
  return quantized_code_bytes(n, bits) + int64_t(sizeof(float)) * quantized_scale_count(n, block);
}

void check_topk(int64_t n, int64_t k, const char* where) {
  const std::string w(where);
  if (n < 0 || n > std::numeric_limits<int32_t>::max())
    throw InputError(w + ".n", "must be in [0, 2^31), got " + std::to_string(n));
  if (k < 0 || k > n)
    throw InputError(w + ".k",
                     "must be in [0, n = " + std::to_string(n) + "], got " + std::to_string(k));
}

void check_quantize(int64_t n, int bits, int64_t block, const char* where) {
  const std::string w(where);
  if (n < 0) throw InputError(w + ".n", "must be >= 0, got " + std::to_string(n));
  if (bits != 4 && bits != 8)
    throw InputError(w + ".bits", "must be 4 or 8, got " + std::to_string(bits));
  if (block <= 0) throw InputError(w + ".block", "must be > 0, got " + std::to_string(block));
}

}  // namespace lowband::kernels
