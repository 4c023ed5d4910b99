#pragma once
// Compression baselines for K/V (docs/design.md §4): top-k sparsification and
// symmetric absmax block quantisation to 8 or 4 bits. The *_bytes functions give
// the exact sizes of the messages these produce (what a rank would send).
//
// Top-k: the k entries of x (n) with the largest |x|; ties go to the lower
// index; NaN ranks above every number (so it is sent, not hidden). Output
// values (k) and int32 indices (k) are in increasing index order.
//
// Quantisation, bits = 8 or 4, blocks of `block` consecutive values (the last
// one may be short): scale_b = max|x| over block b / qmax with qmax = 2^(bits-1) − 1
// (127 or 7); code = round(x / scale_b) in [−qmax, qmax]; x̂ = code · scale_b, so
// |x − x̂| ≤ scale_b / 2. An all-zero block has scale 0 and decodes to 0.
// 8-bit codes are int8, one per byte; 4-bit codes are stored as code + 8 in a
// nibble, element 2i in the low nibble of byte i, element 2i+1 in the high one.
// Message: packed codes then one float32 scale per block.
//
// cuda:: takes device pointers for all arrays.
#include <cstdint>

namespace lowband::kernels {

// k · (4 bytes value + 4 bytes index).
int64_t topk_message_bytes(int64_t k);
// ceil(n · bits / 8) bytes of codes.
int64_t quantized_code_bytes(int64_t n, int bits);
// ceil(n / block) float32 scales.
int64_t quantized_scale_count(int64_t n, int64_t block);
// codes + 4 · scales.
int64_t quantized_message_bytes(int64_t n, int bits, int64_t block);

// Throw InputError naming the argument ("topk.k", "quantize.bits", ...).
void check_topk(int64_t n, int64_t k, const char* where);
void check_quantize(int64_t n, int bits, int64_t block, const char* where);

namespace cpu {
// x (n) -> values (k), indices (k).
void topk_compress(int64_t n, int64_t k, const float* x, float* values, int32_t* indices);
// y (n) = 0 except y[indices[i]] = values[i]. Indices must lie in [0, n).
void topk_decompress(int64_t n, int64_t k, const float* values, const int32_t* indices, float* y);
// x (n) -> codes (quantized_code_bytes), scales (quantized_scale_count).
void quantize_blockwise(int64_t n, int bits, int64_t block, const float* x, uint8_t* codes,
                        float* scales);
// codes, scales -> y (n).
void dequantize_blockwise(int64_t n, int bits, int64_t block, const uint8_t* codes,
                          const float* scales, float* y);
}  // namespace cpu

namespace cuda {
void topk_compress(int64_t n, int64_t k, const float* x, float* values, int32_t* indices);
void topk_decompress(int64_t n, int64_t k, const float* values, const int32_t* indices, float* y);
void quantize_blockwise(int64_t n, int bits, int64_t block, const float* x, uint8_t* codes,
                        float* scales);
void dequantize_blockwise(int64_t n, int bits, int64_t block, const uint8_t* codes,
                          const float* scales, float* y);
}  // namespace cuda

}  // namespace lowband::kernels
