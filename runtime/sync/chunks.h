#pragma once
// The chunks SparseLoCo picks its top-k entries in: every 2-D tensor of a
// parameter layout cut into s x s tiles (s = sqrt(chunk); edge tiles smaller),
// every 1-D tensor (norm gains, and any tensor with one row or one column) into
// runs of `chunk` consecutive elements (the last one shorter). An entry's index
// within its chunk (row-major in the tile) is < chunk <= 4096: 12 bits.
#include <cstdint>
#include <vector>

#include "runtime/model/param_layout.h"

namespace lowband::sync {

constexpr int kIndexBits = 12;
constexpr int64_t kMaxChunk = int64_t(1) << kIndexBits;

// rows x cols elements: element (i, j) is params[offset + i * stride + j].
struct Chunk {
  int64_t offset = 0, rows = 1, cols = 0, stride = 0;
  int tensor = 0;  // index in the layout's tensors (one quantisation table each)
  int64_t size() const { return rows * cols; }
  // Flat parameter index of the chunk's entry `local` (row-major in the tile).
  int64_t flat(int64_t local) const { return offset + (local / cols) * stride + local % cols; }
};

struct ChunkPlan {
  std::vector<Chunk> chunks;  // tensor by tensor, tiles row-major
  int tensors = 0;
  int64_t elements = 0;  // parameters covered (the flat buffer's length)
  // Entries one message holds: sum over chunks of min(k, chunk size).
  int64_t kept(int k) const;
};

// Throws std::invalid_argument unless chunk is a square in 1..4096.
int64_t chunk_side(int64_t chunk);

// ChunkPlan::kept of plan_chunks(tensors, chunk) in closed form, without listing
// the chunks (an 8B-parameter layout has millions): what the message sizes need.
int64_t kept_entries(const std::vector<model::TensorInfo>& tensors, int64_t chunk, int k);

// Throws std::invalid_argument unless chunk is a square in 1..4096.
ChunkPlan plan_chunks(const std::vector<model::TensorInfo>& tensors, int64_t chunk);
inline ChunkPlan plan_chunks(const model::ParamLayout& layout, int64_t chunk) {
  return plan_chunks(layout.tensors(), chunk);
}

}  // namespace lowband::sync
