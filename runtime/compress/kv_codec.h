#pragma once
// What crosses the link when a context-parallel rank shares its K or V block: a
// codec turns the block into the reconstruction its receivers attend to, reports
// the bytes of the real message, and carries gradients back through the same map.
// The owner attends to its own block exactly; only remote receivers see z_hat.
//
// Layout: a block is (n, kv_heads, head_dim) row-major, n tokens of one rank's
// chunk (K after RoPE, or V), as the model's activations hold them.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace lowband::compress {

enum class KvTensor : int { k = 0, v = 1 };

struct KvBlockId {
  int layer = 0;
  KvTensor tensor = KvTensor::k;
  int owner = 0;  // the rank whose chunk this is
  int chunk = 0;  // which of the owner's chunks (zigzag ranks hold two)
  int sequence = 0;  // which sequence of the step's batch (blocks of a step are told apart by all five)
  // (n) global positions of the block's rows (what RoPE rotated K by), or null. The
  // MoS codec needs them for K in its default pre-RoPE frame (compression.k_frame).
  const int64_t* positions = nullptr;
};

class KvCodec {
 public:
  virtual ~KvCodec() = default;
  virtual std::string describe() const = 0;

  // Called once before each training step's forward; step counts from 0.
  virtual void begin_step(int /*step*/) {}

  // z (n, kv_heads, head_dim) -> z_hat, what receivers attend to. Returns the wire
  // bytes of ONE message carrying the block to one receiver. The codec may keep
  // what its backward needs, keyed by id, until the next begin_step.
  virtual double forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat) = 0;

  // dz_hat: the gradient with respect to z_hat summed over all receivers. ADDS the
  // gradient with respect to z into dz (and accumulates the codec's own parameter
  // gradients). Returns the wire bytes of ONE receiver's gradient message to the owner.
  virtual double backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz) = 0;

  // Wire bytes, once compressing (after any warm-up), of one message carrying an
  // n-token block of `tensor` to one receiver, and of one receiver's gradient message
  // back to the owner. `estimate` sizes its transfers with these, so the step graph
  // built from shapes and the one a real run records carry the same bytes.
  virtual double message_bytes(KvTensor tensor, int64_t n) const = 0;
  virtual double gradient_message_bytes(KvTensor tensor, int64_t n) const = 0;

  // Per layer, ‖Z − Ẑ‖_F / ‖Z‖_F of `tensor` over the blocks forwarded since
  // begin_step, for run reports; empty while the codec is not compressing, or when
  // it keeps no such figure (the default).
  virtual std::vector<double> reconstruction_errors(KvTensor /*tensor*/) const { return {}; }

  // Learnable parameters of the codec (MoS: the heads psi mapping a chunk to theta),
  // stepped by the trainer's optimiser; none by default.
  virtual int64_t param_count() const { return 0; }
  virtual float* params() { return nullptr; }
  virtual float* grads() { return nullptr; }
  virtual void zero_grads() {}

  // Everything that decides later steps, for checkpoints (runtime/train/checkpoint.h):
  // written between steps, read back into a codec built from the same scenario
  // (throwing binary::BinaryFormatError when it does not fit). The parameters above
  // are part of it. Codecs whose per-step state begin_step clears (identity, topk,
  // quantize) write nothing.
  virtual void save_state(std::ostream& /*out*/) const {}
  virtual void load_state(std::istream& /*in*/) {}
};

}  // namespace lowband::compress
