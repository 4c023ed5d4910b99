#pragma once
// What crosses a pipeline stage boundary (compression.boundary; docs/design.md,
// "Pipeline parallelism"): the sending stage's residual stream x (n tokens by d)
// forward, the receiving stage's ∂L/∂x backward. The sender encodes, the
// receiver decodes; backward the receiver encodes the gradient and the sender
// decodes it. All host memory, float32; wire_bytes are the modelled sizes at the
// model's wire precision (ModelConfig::bytes_per_element, b below).
//
//   method    forward message                     backward message
//   none      x                  n·d·b            ∂L/∂x        n·d·b
//   subspace  Uᵀ(x − E_fixed[t]), t   n·(k+1)·b   Uᵀ·∂L/∂x     n·k·b     exact (see below)
//   lowrank   Uᵀx                n·k·b            Uᵀ·∂L/∂x     n·k·b     the residual outside span(U) is lost
//   embedding_residual  Uᵀ(x − E[t]), t  n·(k+1)·b  Uᵀ·∂L/∂x  n·k·b     E: a snapshot of the learnable
//                                                                       embedding; the rest is lost
//   topk      per token the kept values + int32 indices       the gradient at the kept indices
//   quantize  per token blocks of absmax codes + f32 scales   ∂L/∂x uncompressed (straight-through)
//
// subspace is exact when every layer before the last boundary keeps its output
// projections (wo, w_down) and the learnable embedding in span(U)
// (SubspaceConstraint, subspace_constraint.h): then x − E_fixed[t] ∈ span(U) and
// decode rebuilds x to fp32 rounding. embedding_residual keeps no constraint:
// the token's own embedding is taken off before projecting, so what the
// projection loses is only what the layers added outside span(U). Its table E is
// set from outside (set_embedding_table: the first stage's embedding, snapshot
// by PipelineRank::snapshot_embedding).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/compress/codec_message.h"
#include "runtime/scenario/scenario.h"

namespace lowband::compress {

class BoundaryCodec {
 public:
  virtual ~BoundaryCodec() = default;
  virtual std::string describe() const = 0;

  // x (n, d), tokens (n) the input token id of each row -> out (values, indices,
  // codes; wire_bytes = message_bytes(n)). The token ids travel in the message
  // where the method needs them (subspace: CodecMessage::indices).
  virtual void encode(int64_t n, const float* x, const int32_t* tokens, CodecMessage& out) const = 0;
  // The message -> x_hat (n, d).
  virtual void decode(int64_t n, const CodecMessage& in, float* x_hat) const = 0;
  // dx_hat (n, d) = ∂L/∂x_hat on the receiver -> its gradient message. `sent` is
  // the forward message of the same rows (top-k sends the gradient at its indices).
  virtual void encode_gradient(int64_t n, const float* dx_hat, const CodecMessage& sent,
                               CodecGradient& out) const = 0;
  // The gradient message -> dx (n, d) on the sender (written, not added).
  virtual void decode_gradient(int64_t n, const CodecGradient& in, const CodecMessage& sent,
                               float* dx) const = 0;

  // Modelled wire bytes of an n-row message each way (`estimate` uses them too).
  virtual double message_bytes(int64_t n) const = 0;
  virtual double gradient_bytes(int64_t n) const = 0;
  // Array sizes of an n-row message and gradient (the receiver sizes its recv).
  virtual MessageLayout message_layout(int64_t n) const = 0;
  virtual int64_t gradient_floats(int64_t n) const = 0;

  // embedding_residual: the table E (vocab × d, row-major) the codec centres each
  // token's row on. Encoding or decoding before a table is set is a logic_error;
  // the other methods keep no table (set_embedding_table is a logic_error there).
  virtual bool centres_on_embedding() const { return false; }
  virtual void set_embedding_table(std::vector<float> table);
  virtual const std::vector<float>& embedding_table() const;
};

// The seed of U and E_fixed: training.seed ^ 0x626f756e64617279 ("boundary"),
// so they are not the model's initialisation stream. The model side builds its
// SubspaceConstraint and E_fixed (subspace_constraint.h) from the same value.
uint64_t boundary_seed(const Scenario& scenario);

// The codec of scenario.compression.boundary for scenario.model (none: dense).
// Every stage builds the same one: U = subspace_basis(d_model, rank,
// boundary_seed) and E_fixed = fixed_embedding(vocab, d_model, boundary_seed).
// InputError("compression.boundary.rank") unless 1 <= rank <= d_model (subspace,
// lowrank); ("compression.boundary.topk_fraction") unless in (0, 1];
// ("compression.boundary.quantize_bits") unless 4 or 8;
// ("compression.boundary.quantize_block") unless >= 1.
//
// topk keeps kept = clamp(round(fraction·d), 1, d) values of each token (row),
// indices in [0, d) within the row, row after row: n·kept·(b + 4) bytes forward,
// n·kept·b back. quantize quantises each token's row on its own (blocks never
// span two tokens, so a message of n rows is n one-row messages):
// n·kernels::quantized_message_bytes(d, bits, block) forward, n·d·b back; codes
// and scales row after row.
std::unique_ptr<BoundaryCodec> make_boundary_codec(const Scenario& scenario);

}  // namespace lowband::compress
