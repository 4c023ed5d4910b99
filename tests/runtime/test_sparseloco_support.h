#pragma once
// Shapes and values for the SparseLoCo tests: a few tensors that exercise every
// kind of chunk (full and edge tiles, vectors, a column), and random values with
// many ties and zeros.
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/model/param_layout.h"

namespace lowband::sync::test {

// A one-layer model's parameters (d_model 16, vocab 20): a part for outer-sync tests.
inline model::ParamLayout one_layer_part() {
  ModelConfig c;
  c.layers = 1;
  c.d_model = 16;
  c.heads = 2;
  c.kv_heads = 2;
  c.ffn_hidden = 32;
  c.vocab = 20;
  c.seq_len = 4;
  return model::ParamLayout(c);
}

// tensors back to back: (rows, cols) each.
inline std::vector<model::TensorInfo> tensors_of(const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  std::vector<model::TensorInfo> out;
  int64_t offset = 0;
  for (const auto& [rows, cols] : shapes) {
    model::TensorInfo t;
    t.name = "t" + std::to_string(out.size());
    t.offset = offset;
    t.rows = rows;
    t.cols = cols;
    offset += rows * cols;
    out.push_back(t);
  }
  return out;
}

// Edge tiles (19 x 13 in 8 x 8 tiles), a vector longer than a chunk, a column,
// an exact tile, and a tensor of zeros only (the last one, filled by `tied_values`).
inline std::vector<model::TensorInfo> mixed_tensors() {
  return tensors_of({{19, 13}, {1, 150}, {70, 1}, {8, 8}, {4, 16}});
}

// Quarter steps in [-2, 2]: a third are zero and most values tie with others.
// The last tensor (count_last elements) is all zeros.
inline std::vector<float> tied_values(int64_t n, int64_t zeros_at_end, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> q(-8, 8), zero(0, 2);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = zero(rng) == 0 ? 0.0f : 0.25f * float(q(rng));
  for (int64_t i = n - zeros_at_end; i < n; ++i) v[static_cast<size_t>(i)] = 0.0f;
  return v;
}

inline std::vector<float> normal_values(int64_t n, double sd, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, sd);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = float(d(rng));
  return v;
}

}  // namespace lowband::sync::test
