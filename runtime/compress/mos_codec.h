#pragma once
// Mixtures of subspaces (docs/design.md §4) as a K/V codec. Per (layer, kv head,
// K or V) the codec holds U₀ (d, r) and a fixed skew-symmetric generator A, and
// per block of one chunk, per head:
//   θ = ψ·mean(Z) + b        (ψ (d), b learnable; mean over the block's n rows)
//   C = Z·U(θ)  (n, r)       U(θ) = U₀ + θ·A·U₀ + ½θ²·A²·U₀  (kernels/subspace.h)
//   Ẑ = C·U(θ)ᵀ              what remote receivers attend to
// The message is C at the model's wire precision plus θ as float32:
// n·r·bytes_per_element + 4 bytes per head; the gradient message back is dC plus
// dθ, the same size.
//
// Split across ranks (kv_codec.h): the owner computes θ and C and sends them
// (CodecMessage::values: C of each head, heads one after another, then θ per head
// unless rotation is fixed); the receiver reconstructs Ẑ from them, so it needs
// U₀ and A (the same on every rank) but not ψ. Backward, the receiver sends
// dC = dẐ·U(θ) per head and, where θ is learned, the part of dθ through the
// reconstruction, ⟨dẐᵀ·C, dU/dθ⟩; both are linear in dẐ, so receivers' messages
// sum. The owner adds the part of dθ through the projection, ⟨Zᵀ·dC, dU/dθ⟩,
// then dψ, db and dZ (the rows' dC·U(θ)ᵀ plus dθ·ψ/n). Note U(θ)ᵀU(θ) = I + ¼θ⁴·U₀ᵀA⁴U₀: the second-order rotation is
// orthonormal only to O(θ⁴), so with r = d the codec is the identity exactly at
// θ = 0 and within ¼θ⁴‖A‖⁴ otherwise.
//
// Life cycle: steps < warmup_steps are uncompressed (Ẑ = Z, identity bytes) and
// in the last of them each owner accumulates each key's Gram matrix ZᵀZ over the
// blocks it encodes (d² floats per key, whatever the sequence length; gram_sums()
// for the trainer to all-reduce); begin_step(warmup_steps) sets U₀ to its top-r
// eigenvectors (kernels::detail::top_eigenvectors). Keys with no observed rows
// (warmup_steps = 0) get a random orthonormal U₀, as with warm_start = false.
//
// A = (G − Gᵀ)/√(8d) with G iid N(0, 1) drawn from the seed per key: its entries
// have variance 1/(4d), so ‖A‖₂ ≈ 1 (the spectral edge of a random skew matrix is
// 2σ√d) and θ reads roughly as a rotation angle in radians.
//
// K frame (compression.k_frame): pre_rope (default) un-rotates each K block by
// its rows' positions (KvBlockId::positions, required for K), compresses it
// there and re-applies RoPE to Ẑ, so U₀ spans the K projection's output as in the
// paper; RoPE is orthogonal, so bytes and relative errors are frame-independent.
// post_rope compresses K as the attention sees it. V has no RoPE.
//
// The final layer (compression.compress_final_layer false, the default): its
// blocks cross as in the warm-up, uncompressed, for the whole run (the paper
// compresses every layer's K/V but the last block's); its keys' U₀ are never fitted
// from data and its ψ never moves. compresses_layer() says which layers compress.
//
// m generators (compression.rotation_params > 1): θ ∈ ℝᵐ per block and head, m
// values of θ on the wire (and of dθ back), ψ (m, d) and b (m) per key, U(θ) from
// mos_rotation.h; m = 1 is the single-generator codec above, bit for bit.
//
// Ablations: rotation fixed: θ = 0, no θ on the wire, no parameters; random: θ
// uniform in [−kRandomThetaMax, kRandomThetaMax] per (step, block, head) from a
// hash of the seed (sent, not learned); warm_start false: random U₀ from step 0.
//
// Not thread-safe: one trainer thread calls it. encode() keeps a copy of each
// block, decode() its C and θ, for the backward until the next begin_step().
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/compress/error_sums.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/scenario/scenario.h"

namespace lowband::compress {

struct MosOptions {
  int layers = 1;
  int kv_heads = 1;
  int head_dim = 1;
  int k_rank = 1;
  int v_rank = 1;
  int bytes_per_element = 2;
  int warmup_steps = 0;
  MosRotation rotation = MosRotation::learned;
  int rotation_params = 1;  // m generators per key (mos_rotation.h); 1: the kernels of kernels/subspace.h
  bool warm_start = true;
  KFrame k_frame = KFrame::pre_rope;
  bool compress_final_layer = false;  // false: layer layers − 1 crosses uncompressed
  float rope_theta = 10000.0f;  // the model's (model::ModelOptions::rope_theta)
  uint64_t seed = 1;
};

// From the scenario (model shapes, compression keys, training.seed).
MosOptions mos_options_from(const Scenario& scenario);

constexpr float kRandomThetaMax = 0.5f;

class MosCodec final : public KvCodec {
 public:
  explicit MosCodec(const MosOptions& options);  // InputError on bad sizes
  std::string describe() const override;
  void begin_step(int step) override;
  void encode(const KvBlockId& id, int64_t n, const float* z, CodecMessage& out) override;
  void decode(const KvBlockId& id, int64_t n, const CodecMessage& in, float* z_hat) override;
  void encode_gradient(const KvBlockId& id, int64_t n, const float* dz_hat, CodecGradient& out) override;
  void decode_gradient(const KvBlockId& id, int64_t n, const CodecGradient& summed, float* dz) override;
  MessageLayout message_layout(KvTensor t, int64_t n) const override;
  int64_t gradient_floats(KvTensor t, int64_t n) const override;
  GramSums gram_sums() override;
  ErrorSums* error_sums() override { return &errors_; }

  // ψⱼ (head_dim floats) then bⱼ for j < m, per (layer, tensor, head), in that
  // nesting order; empty unless rotation is learned.
  int64_t param_count() const override { return static_cast<int64_t>(params_.size()); }
  float* params() override { return params_.data(); }
  float* grads() override { return grads_.data(); }
  void zero_grads() override;
  int64_t param_offset(int layer, KvTensor t, int head) const {
    return int64_t(key(layer, t, head)) * m() * (opt_.head_dim + 1);
  }
  int m() const { return opt_.rotation_params; }

  // Introspection for tests and run reports.
  const MosOptions& options() const { return opt_; }
  bool compressing() const { return fitted_; }  // U₀ is set and blocks are compressed
  int rank(KvTensor t) const { return t == KvTensor::k ? opt_.k_rank : opt_.v_rank; }
  // U₀, A·U₀ and A²·U₀ (d, r) of one key; empty until compressing(). With m
  // generators, Aⱼ·U₀ (m × (d, r)) and Aⱼ·Aₖ·U₀ (m·m × (d, r), at j·m + k).
  const std::vector<float>& u0(int layer, KvTensor t, int head) const { return bases_[key(layer, t, head)].u0; }
  const std::vector<float>& au0(int layer, KvTensor t, int head) const { return bases_[key(layer, t, head)].au0; }
  const std::vector<float>& a2u0(int layer, KvTensor t, int head) const { return bases_[key(layer, t, head)].a2u0; }
  // θ (θ₀ with m generators; θⱼ: j) of `head` in the last encode of block `id`
  // this step (throws if none).
  float theta(const KvBlockId& id, int head, int j = 0) const;
  // Closed-form message sizes while compressing a layer that compresses_layer():
  // forward (C, θ) and backward (dC, dθ). message_layout and gradient_floats, too.
  double message_bytes(KvTensor t, int64_t n) const override;
  double gradient_message_bytes(KvTensor t, int64_t n) const override;
  bool compressing_at(int step) const override { return step >= opt_.warmup_steps; }
  bool compresses_layer(int layer) const override;
  // ‖Z − Ẑ‖_F / ‖Z‖_F over every block of (layer, t) encoded since begin_step
  // (0 while uncompressed and before any block).
  double reconstruction_error(int layer, KvTensor t) const;
  // reconstruction_error of every layer, once compressing(); empty before, and
  // when no block was encoded this step.
  std::vector<double> reconstruction_errors(KvTensor t) const override;

  // The step, U₀ (with A·U₀, A²·U₀) per key, the warm-up's Gram sums when taken
  // between the last warm-up step and the fit, ψ and their gradients
  // (mos_codec_state.cpp). Blocks kept for the backward are per step: not saved.
  void save_state(std::ostream& out) const override;
  void load_state(std::istream& in) override;

 private:
  struct Basis {
    std::vector<float> u0, au0, a2u0;  // (d, r) each
  };
  struct Sent {  // one block the owner encoded, for its decode_gradient
    int64_t n = 0;
    std::vector<float> z;      // (n, kv_heads, d), in the frame compressed
    std::vector<float> theta;  // per head, m each
    std::vector<float> mean;   // per head (d)
    std::vector<int64_t> positions;  // (n) when un-rotated (K, pre_rope)
  };
  struct Received {  // one block a receiver decoded, for its encode_gradient
    int64_t n = 0;
    std::vector<float> c;      // per head (n, r), heads one after another
    std::vector<float> theta;  // per head, m each
    std::vector<int64_t> positions;  // (n) when un-rotated (K, pre_rope)
  };
  using BlockKey = std::tuple<int, int, int, int, int>;

  int key(int layer, KvTensor t, int head) const {
    return (layer * 2 + static_cast<int>(t)) * opt_.kv_heads + head;
  }
  void check_id(const KvBlockId& id, int64_t n, const char* where) const;
  void fit(const std::vector<float>& grams, const std::vector<int64_t>& rows);
  void check_positions(const KvBlockId& id, int64_t n, const char* where) const;
  int theta_count() const { return opt_.rotation == MosRotation::fixed ? 0 : opt_.kv_heads * m(); }
  // This block compressed: fitted and a compressed layer (else it crosses as z itself).
  bool compresses(const KvBlockId& id) const { return fitted_ && compresses_layer(id.layer); }
  void accumulate_grams(const KvBlockId& id, int64_t n, const float* src);
  // θ (m values) of `head` of block `id` into theta.
  void theta_for(const KvBlockId& id, int head, const float* mean, float* theta) const;
  // U(θ) (d, r) of key (layer, t, head) with m > 1 generators.
  std::vector<float> rotated(int layer, KvTensor t, int head, const float* theta) const;
  // dθ (m) through U(θ) of key (layer, t, head) for g = dL/dU (d, r), m > 1.
  void theta_gradient(int layer, KvTensor t, int head, const float* theta, const float* g, float* dtheta) const;
  double identity_bytes(int64_t n) const;
  bool unrotates(const KvBlockId& id) const { return id.tensor == KvTensor::k && opt_.k_frame == KFrame::pre_rope; }

  MosOptions opt_;
  int step_ = -1;
  bool fitted_ = false;
  std::vector<Basis> bases_;                 // per key
  std::vector<float> grams_;                 // (d, d) per key; only during the last warm-up step
  std::vector<int64_t> gram_rows_;           // rows accumulated per key
  std::vector<float> params_, grads_;
  std::map<BlockKey, Sent> sent_;
  std::map<BlockKey, Received> received_;
  ErrorSums errors_;                         // of the blocks encoded this step
};

}  // namespace lowband::compress
