#include "runtime/compress/boundary_codec.h"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernels/matmul.h"
#include "runtime/compress/boundary_baselines.h"
#include "runtime/compress/subspace_constraint.h"

namespace lowband::compress {
namespace {

using kernels::Trans;

class DenseBoundary final : public BoundaryCodec {
 public:
  DenseBoundary(int d, int b) : d_(d), b_(b) {}
  std::string describe() const override { return "none (the dense residual stream)"; }

  void encode(int64_t n, const float* x, const int32_t*, CodecMessage& out) const override {
    out.values.assign(x, x + n * d_);
    out.indices.clear();
    out.codes.clear();
    out.wire_bytes = message_bytes(n);
  }
  void decode(int64_t n, const CodecMessage& in, float* x_hat) const override {
    check_layout(in.layout(), message_layout(n), "DenseBoundary::decode");
    std::copy(in.values.begin(), in.values.end(), x_hat);
  }
  void encode_gradient(int64_t n, const float* dx_hat, const CodecMessage&, CodecGradient& out) const override {
    out.values.assign(dx_hat, dx_hat + n * d_);
    out.wire_bytes = gradient_bytes(n);
  }
  void decode_gradient(int64_t n, const CodecGradient& in, const CodecMessage&, float* dx) const override {
    check_gradient(in, gradient_floats(n), "DenseBoundary::decode_gradient");
    std::copy(in.values.begin(), in.values.end(), dx);
  }

  double message_bytes(int64_t n) const override { return double(n) * d_ * b_; }
  double gradient_bytes(int64_t n) const override { return double(n) * d_ * b_; }
  MessageLayout message_layout(int64_t n) const override { return {n * d_, 0, 0}; }
  int64_t gradient_floats(int64_t n) const override { return n * d_; }

 private:
  int d_, b_;
};

// subspace (exact: sends Uᵀ(x − E_fixed[t]) and t), lowrank (sends Uᵀx, loses
// the rest) and embedding_residual (sends Uᵀ(x − E[t]) and t with E a snapshot
// set from outside, loses the rest): the same basis and projections, differing
// only in the table taken off before projecting and put back after.
enum class Centre { none, fixed_table, embedding };

class SubspaceBoundary final : public BoundaryCodec {
 public:
  SubspaceBoundary(int d, int rank, int b, Centre centre, int vocab, uint64_t seed)
      : d_(d), k_(rank), b_(b), vocab_(vocab), centre_(centre), seed_(seed), u_(subspace_basis(d, rank, seed)) {}
  std::string describe() const override {
    const std::string of = " (rank " + std::to_string(k_) + " of " + std::to_string(d_);
    switch (centre_) {
      case Centre::fixed_table: return "subspace" + of + ", exact under the subspace constraint)";
      case Centre::embedding: return "embedding_residual" + of + " around the embedding snapshot, the rest is lost)";
      case Centre::none: break;
    }
    return "lowrank" + of + ", the rest is lost)";
  }
  bool centres_on_embedding() const override { return centre_ == Centre::embedding; }
  void set_embedding_table(std::vector<float> table) override {
    if (centre_ != Centre::embedding) return BoundaryCodec::set_embedding_table(std::move(table));
    if (table.size() != size_t(vocab_) * size_t(d_))
      throw std::logic_error("SubspaceBoundary: an embedding table of " + std::to_string(table.size()) +
                             " floats, expected vocab x d_model = " + std::to_string(int64_t(vocab_) * d_));
    table_ = std::move(table);
  }
  const std::vector<float>& embedding_table() const override {
    return centre_ == Centre::embedding ? table_ : BoundaryCodec::embedding_table();
  }

  void encode(int64_t n, const float* x, const int32_t* tokens, CodecMessage& out) const override {
    out.values.assign(size_t(n * k_), 0.0f);
    out.codes.clear();
    out.indices.clear();
    if (n == 0) return void(out.wire_bytes = 0);
    const float* a = x;
    std::vector<float> centred;
    if (centre_ != Centre::none) {
      out.indices.assign(tokens, tokens + n);
      check_tokens(out.indices, "SubspaceBoundary::encode");
      centred.assign(x, x + n * d_);
      const std::vector<float>& t = table();
      for (int64_t r = 0; r < n; ++r)
        for (int e = 0; e < d_; ++e) centred[r * d_ + e] -= t[size_t(tokens[r]) * d_ + e];
      a = centred.data();
    }
    // values (n, k) = a·U: row r is Uᵀ·a_r.
    kernels::cpu::matmul(Trans::no, Trans::no, n, k_, d_, 1.0f, a, d_, u_.data(), k_, 0.0f, out.values.data(), k_);
    out.wire_bytes = message_bytes(n);
  }
  void decode(int64_t n, const CodecMessage& in, float* x_hat) const override {
    check_layout(in.layout(), message_layout(n), "SubspaceBoundary::decode");
    if (n == 0) return;
    kernels::cpu::matmul(Trans::no, Trans::yes, n, d_, k_, 1.0f, in.values.data(), k_, u_.data(), k_, 0.0f, x_hat,
                         d_);
    if (centre_ == Centre::none) return;
    check_tokens(in.indices, "SubspaceBoundary::decode");
    const std::vector<float>& t = table();
    for (int64_t r = 0; r < n; ++r)
      for (int e = 0; e < d_; ++e) x_hat[r * d_ + e] += t[size_t(in.indices[r]) * d_ + e];
  }
  // x̂ = U·z + E[t] (or U·z) is linear in z with Jacobian U: ∂L/∂z = Uᵀ·∂L/∂x̂.
  void encode_gradient(int64_t n, const float* dx_hat, const CodecMessage&, CodecGradient& out) const override {
    out.values.assign(size_t(n * k_), 0.0f);
    if (n > 0)
      kernels::cpu::matmul(Trans::no, Trans::no, n, k_, d_, 1.0f, dx_hat, d_, u_.data(), k_, 0.0f,
                           out.values.data(), k_);
    out.wire_bytes = gradient_bytes(n);
  }
  // z = Uᵀ(x − E[t]) with E held fixed: ∂L/∂x = U·∂L/∂z.
  void decode_gradient(int64_t n, const CodecGradient& in, const CodecMessage&, float* dx) const override {
    check_gradient(in, gradient_floats(n), "SubspaceBoundary::decode_gradient");
    if (n > 0)
      kernels::cpu::matmul(Trans::no, Trans::yes, n, d_, k_, 1.0f, in.values.data(), k_, u_.data(), k_, 0.0f, dx,
                           d_);
  }

  // The token id travels as one more value of b bytes (table in boundary_codec.h).
  double message_bytes(int64_t n) const override { return double(n) * (k_ + (token_ids() ? 1 : 0)) * b_; }
  double gradient_bytes(int64_t n) const override { return double(n) * k_ * b_; }
  MessageLayout message_layout(int64_t n) const override { return {n * k_, token_ids() ? n : 0, 0}; }
  int64_t gradient_floats(int64_t n) const override { return n * k_; }

 private:
  bool token_ids() const { return centre_ != Centre::none; }
  // Token ids come from the data or from another process: never read outside the table.
  void check_tokens(const std::vector<int32_t>& tokens, const char* where) const {
    for (int32_t t : tokens)
      if (t < 0 || t >= vocab_)
        throw std::logic_error(std::string(where) + ": token " + std::to_string(t) + " outside a vocabulary of " +
                               std::to_string(vocab_));
  }
  // E_fixed is made on first use: `estimate` builds the codec for its byte counts
  // only, and at paper scale the table is vocab · d floats (50257 × 2560: 0.5 GB).
  const std::vector<float>& table() const {
    if (centre_ == Centre::embedding) {
      if (table_.empty()) throw std::logic_error("SubspaceBoundary: no embedding snapshot set before the first message");
      return table_;
    }
    if (table_.empty()) table_ = fixed_embedding(vocab_, d_, seed_);
    return table_;
  }
  int d_, k_, b_, vocab_;
  Centre centre_;
  uint64_t seed_;
  std::vector<float> u_;              // (d, k)
  mutable std::vector<float> table_;  // (vocab, d): E_fixed (subspace) or the snapshot (embedding_residual)
};

}  // namespace

void BoundaryCodec::set_embedding_table(std::vector<float>) {
  throw std::logic_error("BoundaryCodec: " + describe() + " keeps no embedding table");
}

const std::vector<float>& BoundaryCodec::embedding_table() const {
  static const std::vector<float> none;
  return none;
}

uint64_t boundary_seed(const Scenario& scenario) { return scenario.training.seed ^ 0x626f756e64617279ULL; }

std::unique_ptr<BoundaryCodec> make_boundary_codec(const Scenario& scenario) {
  const ModelConfig& m = scenario.model;
  const BoundaryConfig& c = scenario.compression.boundary;
  if (m.d_model < 1) throw InputError("model.d_model", "must be at least 1");
  if (m.bytes_per_element < 1) throw InputError("model.bytes_per_element", "must be at least 1");
  switch (c.method) {
    case BoundaryMethod::none:
      return std::make_unique<DenseBoundary>(m.d_model, m.bytes_per_element);
    case BoundaryMethod::subspace:
    case BoundaryMethod::lowrank:
    case BoundaryMethod::embedding_residual: {  // subspace_basis checks the rank
      const Centre centre = c.method == BoundaryMethod::subspace             ? Centre::fixed_table
                            : c.method == BoundaryMethod::embedding_residual ? Centre::embedding
                                                                             : Centre::none;
      if (centre != Centre::none && m.vocab < 1) throw InputError("model.vocab", "must be at least 1");
      return std::make_unique<SubspaceBoundary>(m.d_model, c.rank, m.bytes_per_element, centre, m.vocab,
                                                boundary_seed(scenario));
    }
    case BoundaryMethod::topk:
      return make_topk_boundary(m.d_model, m.bytes_per_element, c.topk_fraction);
    case BoundaryMethod::quantize:
      return make_quantize_boundary(m.d_model, m.bytes_per_element, c.quantize_bits, c.quantize_block);
  }
  throw std::logic_error("make_boundary_codec: unknown compression.boundary.method");
}

}  // namespace lowband::compress
