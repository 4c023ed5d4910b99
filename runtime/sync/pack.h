#pragma once
// SparseLoCo's message as bytes: what crosses the link, and its size.
//
// Layout (no header: the receiver knows the plan, k and the bits, so it knows
// every count; all replicas' messages are the same size):
//   value_bits <= 8:  tables  T · 2^b float32 (the tensors' bin means, tensor-major)
//                     indices K · 12 bits, little-endian bit stream, zero-padded to a byte
//                     codes   K · b bits, the same, zero-padded to a byte
//   value_bits == 32: indices as above, then K float32 values
// where K = sum over chunks of min(k, chunk size) (ChunkPlan::kept) and T the tensors:
//   bytes = 4·T·2^b + ceil(12·K / 8) + ceil(b·K / 8)      (b <= 8)
//   bytes = ceil(12·K / 8) + 4·K                          (b == 32)
// With k = 64 of 4096 and b = 2, K ≈ N/64 for N parameters: bytes ≈ N · 14 / 512
// ≈ 0.0273 · N (plus the 16 bytes of table per tensor).
#include <cstdint>
#include <vector>

#include "runtime/sync/sparseloco.h"

namespace lowband::sync {

int64_t packed_bytes(const ChunkPlan& plan, const SparseCodec& codec);
// The same from the layout's tensors, without listing the chunks (estimate's dry syncs).
int64_t packed_bytes(const std::vector<model::TensorInfo>& tensors, int64_t chunk, const SparseCodec& codec);
std::vector<uint8_t> pack(const ChunkPlan& plan, const SparseCodec& codec, const SparseMessage& m);
// Throws std::invalid_argument for a buffer of the wrong size or an index outside its chunk.
SparseMessage unpack(const ChunkPlan& plan, const SparseCodec& codec, const uint8_t* data, int64_t bytes);

// DiLoCo's outer gradient at value_bits b <= 8 (Streaming DiLoCo's low-bit outer
// gradients): every value of each tensor quantised to 2^b bins over mean ± 3σ of
// the tensor (bins.h), sent as b-bit codes after the tensors' tables (float32,
// tensor-major); no error feedback (what the bins lose is lost):
//   bytes = 4·T·2^b + ceil(b·N / 8)     (N parameters, T tensors)
// `tensors` cover the buffer [0, N) in order.
int64_t dense_packed_bytes(const std::vector<model::TensorInfo>& tensors, int bits);
std::vector<uint8_t> pack_dense(const std::vector<model::TensorInfo>& tensors, int bits, const float* values);
// out (N) <- the decoded values. Throws std::invalid_argument for a buffer of the wrong size.
void unpack_dense(const std::vector<model::TensorInfo>& tensors, int bits, const uint8_t* data, int64_t bytes,
                  float* out);

}  // namespace lowband::sync
