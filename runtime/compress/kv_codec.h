#pragma once
// What crosses the link when a context-parallel rank shares its K or V block: a
// codec turns the block into the reconstruction its receivers attend to, reports
// the bytes of the real message, and carries gradients back through the same map.
// The owner attends to its own block exactly (only remote receivers see z_hat),
// or, with compression.owner_kv reconstructed, decodes its own message and
// sends its own gradient through encode_gradient as a receiver does
// (context/attention.h).
//
// Layout: a block is (n, kv_heads, head_dim) row-major, n tokens of one rank's
// chunk (K after RoPE, or V), as the model's activations hold them.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "runtime/compress/codec_message.h"

namespace lowband::compress {

enum class KvTensor : int { k = 0, v = 1 };

struct KvBlockId {
  int layer = 0;
  KvTensor tensor = KvTensor::k;
  int owner = 0;  // the rank whose chunk this is
  int chunk = 0;  // which of the owner's chunks (zigzag ranks hold two)
  int sequence = 0;  // which sequence of the step's batch (blocks of a step are told apart by all five)
  // (n) global positions of the block's rows (what RoPE rotated K by), or null. The
  // MoS codec needs them for K in its default pre-RoPE frame (compression.k_frame),
  // on the owner (encode) and on receivers (decode, encode_gradient) alike.
  const int64_t* positions = nullptr;
};

class ErrorSums;

// MoS warm-up statistics (per key Gram sums ZᵀZ, d² floats each, and the rows
// they saw) that each rank gathers over the blocks it encodes. Null/0 except
// during the last warm-up step.
struct GramSums {
  float* grams = nullptr;
  int64_t gram_count = 0;
  int64_t* rows = nullptr;
  int64_t row_count = 0;
};

// The codec is split into the halves that run on different ranks: the owner of a
// block encodes it and decodes the receivers' summed gradient; each receiver
// decodes the message and encodes its own gradient. Every rank holds its own
// codec built from the same scenario (same seed, so the same generators A and
// random bases), and what one half needs from the other crosses in the messages
// (codec_message.h). Each half keeps what its backward needs, keyed by the block id,
// until the next begin_step. Not thread-safe.
// A codec's K/V block shape: InputError naming the key (model.kv_heads,
// model.d_model for head_dim, model.bytes_per_element) unless each is >= 1.
void check_kv_shape(int kv_heads, int head_dim, int bytes_per_element);

class KvCodec {
 public:
  virtual ~KvCodec() = default;
  virtual std::string describe() const = 0;

  // Called once before each training step's forward on every rank; step counts
  // from 0. Owners and receivers must agree on the step (it decides the phase).
  virtual void begin_step(int /*step*/) {}

  // Owner: block z (n, kv_heads, head_dim) -> the message for its receivers (the
  // same for each), with out.wire_bytes its modelled size.
  virtual void encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) = 0;
  // Receiver: the message -> z_hat (n, kv_heads, head_dim), what it attends to.
  virtual void decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) = 0;
  // Receiver: its own dL/dz_hat -> its gradient message; linear in dz_hat, so the
  // receivers' messages sum (CodecGradient::add) into the owner's.
  virtual void encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) = 0;
  // Owner: the receivers' summed gradient message -> ADDS dL/dz into dz and
  // accumulates the codec's own parameter gradients.
  virtual void decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) = 0;

  // What encode / encode_gradient produce for an n-token block of `tensor` in the
  // current phase (the receiver sizes its recv with them: packed_bytes).
  virtual MessageLayout message_layout(KvTensor tensor, int64_t n) const = 0;
  virtual int64_t gradient_floats(KvTensor tensor, int64_t n) const = 0;

  // Both halves on this one object: encode then decode; returns the message's wire bytes.
  double forward(const KvBlockId& id, int64_t n, const float* z, float* z_hat);
  // dz_hat summed over all receivers: encode_gradient then decode_gradient;
  // returns the wire bytes of ONE receiver's gradient message.
  double backward(const KvBlockId& id, int64_t n, const float* dz_hat, float* dz);

  // Wire bytes, once compressing (after any warm-up), of one message carrying an
  // n-token block of `tensor` to one receiver, and of one receiver's gradient message
  // back to the owner. `estimate` sizes its transfers with these, so the step graph
  // built from shapes and the one a real run records carry the same bytes.
  virtual double message_bytes(KvTensor tensor, int64_t n) const = 0;
  virtual double gradient_message_bytes(KvTensor tensor, int64_t n) const = 0;
  // Whether step `step` (from 0) sends those compressed messages; false: the
  // uncompressed block and gradient (a MoS warm-up). A dry run sizes its
  // messages by it (dry_codec.h).
  virtual bool compressing_at(int /*step*/) const { return true; }
  // Whether layer `layer`'s blocks get those compressed messages while
  // compressing; false: the uncompressed block and gradient, the whole run (MoS's
  // final layer, compression.compress_final_layer false).
  virtual bool compresses_layer(int /*layer*/) const { return true; }

  // Per layer, ‖Z − Ẑ‖_F / ‖Z‖_F of `tensor` over the blocks encoded since
  // begin_step, for run reports; empty while the codec is not compressing, or when
  // it keeps no such figure (the default). Owners add each block once when they
  // encode it: all-reduce error_sums() in place to get the figure over all ranks.
  virtual std::vector<double> reconstruction_errors(KvTensor /*tensor*/) const { return {}; }
  virtual ErrorSums* error_sums() { return nullptr; }
  // MoS: all-reduce both arrays in place after the last warm-up step's encodes and
  // before begin_step(warmup_steps), which fits U₀ from them; the fit (Jacobi in
  // float64) is deterministic, so every rank gets the same U₀ from the same sums.
  virtual GramSums gram_sums() { return {}; }

  // Learnable parameters of the codec (MoS: the heads psi mapping a chunk to theta),
  // stepped by the trainer's optimiser; none by default. Each owner accumulates the
  // gradients of its own blocks only: all-reduce grads() before the step so every
  // rank's copy of psi stays the same.
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
