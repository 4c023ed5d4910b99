#pragma once
// The attention step of a layer, pluggable: the model computes Q, K, V (after
// the norm, the projections and RoPE) and hands them to a provider, which
// returns the attention output; in the backward it hands back dout and gets
// dQ, dK, dV. The single-device model uses LocalAttention (blockwise attention
// over its own sequences); a context-parallel trainer implements the same
// interface by exchanging K/V (and dK/dV) between ranks.
//
// Layouts (row-major; rows are the model's local tokens, sequence-major):
//   q, out, dq, dout   (sequences * tokens, heads, head_dim)
//   k, v, dk, dv       (sequences * tokens, kv_heads, head_dim)
//   positions          (sequences * tokens) global position of each local token
#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "kernels/backend_buffer.h"

namespace lowband::model {

struct AttentionBatch {
  int64_t sequences = 1;  // B
  int64_t tokens = 0;     // local tokens per sequence (a rank's chunk under CP)
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t head_dim = 0;
  const int64_t* positions = nullptr;
  int64_t rows() const { return sequences * tokens; }
};

class AttentionProvider {
 public:
  virtual ~AttentionProvider() = default;
  // out written. A provider may keep what its backward needs (e.g. the lse)
  // per layer; q, k, v and out stay valid and unchanged until backward(layer).
  virtual void forward(int layer, const AttentionBatch& batch, const float* q, const float* k,
                       const float* v, float* out) = 0;
  // dq, dk, dv written (not accumulated). q, k, v, out are those of forward(layer).
  virtual void backward(int layer, const AttentionBatch& batch, const float* q, const float* k,
                        const float* v, const float* out, const float* dout, float* dq, float* dk,
                        float* dv) = 0;
};

// Causal blockwise attention over each local sequence on its own, on one
// device (q, k, v, out and the gradients are that device's memory; positions
// stay on the host). Each sequence's positions must be consecutive (p0, p0+1,
// ...), else InputError("positions[i]"). Keeps the lse of every layer.
class LocalAttention : public AttentionProvider {
 public:
  explicit LocalAttention(kernels::Device device = kernels::Device::cpu)
      : k_(&kernels::backend(device)) {}
  void forward(int layer, const AttentionBatch& batch, const float* q, const float* k,
               const float* v, float* out) override;
  void backward(int layer, const AttentionBatch& batch, const float* q, const float* k,
                const float* v, const float* out, const float* dout, float* dq, float* dk,
                float* dv) override;

 private:
  float* lse_for(int layer, const AttentionBatch& batch);
  const kernels::Backend* k_;
  std::vector<kernels::BackendBuffer<float>> lse_;  // per layer: (sequences, heads, tokens)
  kernels::BackendBuffer<float> delta_;             // (heads, tokens) scratch
};

}  // namespace lowband::model
