#include "runtime/sync/chunks.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace lowband::sync {

int64_t ChunkPlan::kept(int k) const {
  int64_t n = 0;
  for (const Chunk& c : chunks) n += std::min<int64_t>(k, c.size());
  return n;
}

int64_t chunk_side(int64_t chunk) {
  int64_t side = 1;
  while (side * side < chunk) ++side;
  if (chunk < 1 || chunk > kMaxChunk || side * side != chunk)
    throw std::invalid_argument("chunk of " + std::to_string(chunk) + " elements: expected a square in 1..4096");
  return side;
}

int64_t kept_entries(const std::vector<model::TensorInfo>& tensors, int64_t chunk, int k) {
  const int64_t side = chunk_side(chunk);
  const auto kept = [k](int64_t size) { return std::min<int64_t>(k, size); };
  int64_t n = 0;
  for (const model::TensorInfo& info : tensors) {
    if (info.rows == 1 || info.cols == 1) {  // runs of `chunk`, the last one shorter
      const int64_t count = info.count();
      n += count / chunk * kept(chunk) + (count % chunk ? kept(count % chunk) : 0);
      continue;
    }
    // Tiles: full rows x full cols of side², then the edge tiles of the last row
    // and column band (r and c elements wide) and their corner.
    const int64_t full_r = info.rows / side, r = info.rows % side;
    const int64_t full_c = info.cols / side, c = info.cols % side;
    n += full_r * full_c * kept(side * side);
    if (c) n += full_r * kept(side * c);
    if (r) n += full_c * kept(r * side);
    if (r && c) n += kept(r * c);
  }
  return n;
}

ChunkPlan plan_chunks(const std::vector<model::TensorInfo>& tensors, int64_t chunk) {
  const int64_t side = chunk_side(chunk);
  ChunkPlan plan;
  plan.tensors = int(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    const model::TensorInfo& info = tensors[t];
    plan.elements = std::max(plan.elements, info.offset + info.count());
    if (info.rows == 1 || info.cols == 1) {  // a vector: runs of `chunk` elements
      for (int64_t at = 0; at < info.count(); at += chunk)
        plan.chunks.push_back({info.offset + at, 1, std::min(chunk, info.count() - at), 0, int(t)});
      continue;
    }
    for (int64_t r = 0; r < info.rows; r += side)
      for (int64_t c = 0; c < info.cols; c += side)
        plan.chunks.push_back({info.offset + r * info.cols + c, std::min(side, info.rows - r),
                               std::min(side, info.cols - c), info.cols, int(t)});
  }
  return plan;
}

}  // namespace lowband::sync
