// The stage-boundary codecs (runtime/compress/boundary_codec.h): subspace is
// exact on x − E_fixed[t] ∈ span(U), lowrank keeps the projection onto span(U),
// embedding_residual the projection of x − E[t] around the table it was given,
// gradients are U·Uᵀ·g, top-k and quantize work token by token, and every
// method's message sizes follow the header's table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/error.h"
#include "runtime/compress/boundary_codec.h"
#include "runtime/compress/subspace_constraint.h"
#include "test_mos_reference.h"

namespace lowband::compress {
namespace {

using test::gaussian;
using test::relative_frobenius;

constexpr int kD = 32, kVocab = 50, kRank = 6, kBytes = 2;

Scenario scenario_of(BoundaryMethod method, int rank = kRank, uint64_t seed = 5) {
  Scenario s;
  s.model.d_model = kD;
  s.model.vocab = kVocab;
  s.model.bytes_per_element = kBytes;
  s.training.seed = seed;
  s.compression.boundary.method = method;
  s.compression.boundary.rank = rank;
  s.compression.boundary.topk_fraction = 0.1;  // kept = round(3.2) = 3 per token
  s.compression.boundary.quantize_bits = 4;
  s.compression.boundary.quantize_block = 8;  // 4 blocks per token
  return s;
}

std::vector<int32_t> tokens_of(int64_t n) {
  std::vector<int32_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = int32_t((i * 17 + 3) % kVocab);
  return t;
}

// Float64 U·Uᵀ·x for each row of x (n, d).
std::vector<float> projected_ref(const std::vector<float>& U, int k, const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t r = 0; r < x.size() / kD; ++r)
    for (int e = 0; e < kD; ++e) {
      double y = 0;
      for (int j = 0; j < k; ++j) {
        double t = 0;
        for (int f = 0; f < kD; ++f) t += double(U[f * k + j]) * x[r * kD + f];
        y += double(U[e * k + j]) * t;
      }
      out[r * kD + e] = float(y);
    }
  return out;
}

std::vector<float> round_trip(const BoundaryCodec& codec, const std::vector<float>& x, CodecMessage& m) {
  const int64_t n = int64_t(x.size()) / kD;
  const auto t = tokens_of(n);
  codec.encode(n, x.data(), t.data(), m);
  std::vector<float> x_hat(x.size(), -9.0f);
  codec.decode(n, m, x_hat.data());
  return x_hat;
}

TEST(BoundaryCodec, SubspaceRebuildsXInEFixedPlusSpanU) {
  const Scenario s = scenario_of(BoundaryMethod::subspace);
  const auto codec = make_boundary_codec(s);
  const auto U = subspace_basis(kD, kRank, boundary_seed(s));
  const auto E = fixed_embedding(kVocab, kD, boundary_seed(s));
  const int64_t n = 9;
  const auto t = tokens_of(n);
  const auto c = gaussian(size_t(n * kRank), 21);
  std::vector<float> x(n * kD);
  for (int64_t r = 0; r < n; ++r)
    for (int e = 0; e < kD; ++e) {
      double v = E[size_t(t[r]) * kD + e];
      for (int j = 0; j < kRank; ++j) v += double(U[e * kRank + j]) * c[r * kRank + j];
      x[r * kD + e] = float(v);
    }
  CodecMessage m;
  const auto x_hat = round_trip(*codec, x, m);
  EXPECT_EQ(m.indices, t);  // the token ids travel
  EXPECT_LT(relative_frobenius(x, x_hat), 1e-6);
  EXPECT_LT(relative_frobenius(c, m.values), 1e-5) << "the message is the coefficients in U";
}

TEST(BoundaryCodec, SubspaceOfFullRankRoundTripsAnyX) {
  const auto codec = make_boundary_codec(scenario_of(BoundaryMethod::subspace, kD));
  const auto x = gaussian(size_t(7 * kD), 22);
  CodecMessage m;
  EXPECT_LT(relative_frobenius(x, round_trip(*codec, x, m)), 1e-6);
}

TEST(BoundaryCodec, LowrankKeepsExactlyTheProjectionOntoSpanU) {
  const Scenario s = scenario_of(BoundaryMethod::lowrank);
  const auto U = subspace_basis(kD, kRank, boundary_seed(s));
  const auto x = gaussian(size_t(11 * kD), 23);
  CodecMessage m;
  const auto x_hat = round_trip(*make_boundary_codec(s), x, m);
  EXPECT_TRUE(m.indices.empty());
  EXPECT_LT(relative_frobenius(projected_ref(U, kRank, x), x_hat), 1e-6);
  EXPECT_GT(relative_frobenius(x, x_hat), 0.5) << "rank 6 of 32 loses most of a Gaussian x";
}

// embedding_residual: x̂ = E[t] + U·Uᵀ(x − E[t]) around the table it was given,
// exact where x − E[t] ∈ span(U); no table, no message.
TEST(BoundaryCodec, EmbeddingResidualProjectsAroundTheSnapshotItWasGiven) {
  const Scenario s = scenario_of(BoundaryMethod::embedding_residual);
  const auto codec = make_boundary_codec(s);
  const auto U = subspace_basis(kD, kRank, boundary_seed(s));
  const int64_t n = 9;
  const auto t = tokens_of(n);
  const auto x = gaussian(size_t(n * kD), 31);
  CodecMessage m;
  EXPECT_THROW(codec->encode(n, x.data(), t.data(), m), std::logic_error) << "no snapshot yet";
  EXPECT_THROW(codec->set_embedding_table(std::vector<float>(kVocab * kD - 1)), std::logic_error);
  const auto E = gaussian(size_t(kVocab * kD), 32);
  ASSERT_TRUE(codec->centres_on_embedding());
  codec->set_embedding_table(E);
  EXPECT_EQ(codec->embedding_table(), E);
  // A general x: the table's row back, plus the projection of the rest (float64 reference).
  std::vector<float> rest(x.size());
  for (int64_t r = 0; r < n; ++r)
    for (int e = 0; e < kD; ++e) rest[r * kD + e] = x[r * kD + e] - E[size_t(t[r]) * kD + e];
  std::vector<float> want = projected_ref(U, kRank, rest);
  for (int64_t r = 0; r < n; ++r)
    for (int e = 0; e < kD; ++e) want[r * kD + e] += E[size_t(t[r]) * kD + e];
  const auto x_hat = round_trip(*codec, x, m);
  EXPECT_EQ(m.indices, t);  // the token ids travel
  EXPECT_LT(relative_frobenius(want, x_hat), 1e-6);
  EXPECT_GT(relative_frobenius(x, x_hat), 0.3) << "what lies outside span(U) is lost";
  // x − E[t] in span(U): exact.
  const auto c = gaussian(size_t(n * kRank), 33);
  std::vector<float> inside(x.size());
  for (int64_t r = 0; r < n; ++r)
    for (int e = 0; e < kD; ++e) {
      double v = E[size_t(t[r]) * kD + e];
      for (int j = 0; j < kRank; ++j) v += double(U[e * kRank + j]) * c[r * kRank + j];
      inside[r * kD + e] = float(v);
    }
  EXPECT_LT(relative_frobenius(inside, round_trip(*codec, inside, m)), 1e-6);
  // The other methods keep no table.
  EXPECT_FALSE(make_boundary_codec(scenario_of(BoundaryMethod::subspace))->centres_on_embedding());
  EXPECT_THROW(make_boundary_codec(scenario_of(BoundaryMethod::lowrank))->set_embedding_table(E), std::logic_error);
}

TEST(BoundaryCodec, SubspaceAndLowrankGradientIsUUTransposeG) {
  for (auto method : {BoundaryMethod::subspace, BoundaryMethod::lowrank, BoundaryMethod::embedding_residual}) {
    const Scenario s = scenario_of(method);
    const auto codec = make_boundary_codec(s);
    if (codec->centres_on_embedding()) codec->set_embedding_table(gaussian(size_t(kVocab * kD), 34));
    const auto U = subspace_basis(kD, kRank, boundary_seed(s));
    const int64_t n = 8;
    const auto x = gaussian(size_t(n * kD), 24), g = gaussian(size_t(n * kD), 25);
    CodecMessage sent;
    round_trip(*codec, x, sent);
    CodecGradient gm;
    codec->encode_gradient(n, g.data(), sent, gm);
    std::vector<float> dx(g.size(), 7.0f);  // written, not added
    codec->decode_gradient(n, gm, sent, dx.data());
    EXPECT_LT(relative_frobenius(projected_ref(U, kRank, g), dx), 1e-6) << codec->describe();
  }
}

TEST(BoundaryCodec, MessageSizesFollowTheTable) {
  struct Want {
    BoundaryMethod method;
    double forward, back;  // bytes per token
    MessageLayout layout;  // per token
    int64_t gradient;      // floats per token
  };
  // d = 32, b = 2, k = 6; topk keeps 3 (values + int32 indices); quantize 4-bit in
  // blocks of 8: 16 code bytes and 4 float32 scales per token.
  const Want wants[] = {
      {BoundaryMethod::none, 32 * 2, 32 * 2, {32, 0, 0}, 32},
      {BoundaryMethod::subspace, (6 + 1) * 2, 6 * 2, {6, 1, 0}, 6},
      {BoundaryMethod::lowrank, 6 * 2, 6 * 2, {6, 0, 0}, 6},
      {BoundaryMethod::embedding_residual, (6 + 1) * 2, 6 * 2, {6, 1, 0}, 6},
      {BoundaryMethod::topk, 3 * (2 + 4), 3 * 2, {3, 3, 0}, 3},
      {BoundaryMethod::quantize, 16 + 4 * 4, 32 * 2, {4, 0, 16}, 32},
  };
  for (const Want& w : wants) {
    const auto codec = make_boundary_codec(scenario_of(w.method));
    if (codec->centres_on_embedding()) codec->set_embedding_table(gaussian(size_t(kVocab * kD), 35));
    for (int64_t n : {0, 1, 5, 17}) {
      SCOPED_TRACE(codec->describe() + ", n " + std::to_string(n));
      const MessageLayout layout{w.layout.values * n, w.layout.indices * n, w.layout.codes * n};
      EXPECT_EQ(codec->message_bytes(n), w.forward * n);
      EXPECT_EQ(codec->gradient_bytes(n), w.back * n);
      EXPECT_TRUE(codec->message_layout(n) == layout);
      EXPECT_EQ(codec->gradient_floats(n), w.gradient * n);
      const auto x = gaussian(size_t(std::max<int64_t>(n, 1) * kD), 26 + n);
      const auto t = tokens_of(std::max<int64_t>(n, 1));
      CodecMessage m;
      codec->encode(n, x.data(), t.data(), m);
      EXPECT_TRUE(m.layout() == layout);
      EXPECT_EQ(m.wire_bytes, w.forward * n);
      CodecGradient g;
      codec->encode_gradient(n, x.data(), m, g);
      EXPECT_EQ(int64_t(g.values.size()), w.gradient * n);
      EXPECT_EQ(g.wire_bytes, w.back * n);
    }
  }
}

TEST(BoundaryCodec, TopkKeepsEachTokensLargestAndSendsTheirGradient) {
  const auto codec = make_boundary_codec(scenario_of(BoundaryMethod::topk));
  const int64_t n = 6, kept = 3;
  const auto x = gaussian(size_t(n * kD), 27), g = gaussian(size_t(n * kD), 28);
  CodecMessage m;
  const auto x_hat = round_trip(*codec, x, m);
  CodecGradient gm;
  codec->encode_gradient(n, g.data(), m, gm);
  std::vector<float> dx(g.size(), 7.0f);
  codec->decode_gradient(n, gm, m, dx.data());
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int> order(kD);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return std::abs(x[r * kD + a]) > std::abs(x[r * kD + b]); });
    std::vector<bool> top(kD, false);
    for (int j = 0; j < kept; ++j) top[order[j]] = true;
    for (int e = 0; e < kD; ++e) {
      const size_t i = size_t(r * kD + e);
      EXPECT_EQ(x_hat[i], top[e] ? x[i] : 0.0f) << "row " << r << " entry " << e;
      EXPECT_EQ(dx[i], top[e] ? g[i] : 0.0f) << "row " << r << " entry " << e;
    }
  }
}

TEST(BoundaryCodec, QuantizeErrorIsWithinHalfAStepOfEachTokensBlocks) {
  for (int bits : {4, 8}) {
    Scenario s = scenario_of(BoundaryMethod::quantize);
    s.compression.boundary.quantize_bits = bits;
    s.compression.boundary.quantize_block = 12;  // 12, 12, 8: no block spans two tokens
    const auto codec = make_boundary_codec(s);
    const int64_t n = 5;
    const double qmax = (1 << (bits - 1)) - 1;
    auto x = gaussian(size_t(n * kD), 29);
    x[kD + 30] = 40.0f;  // a large value in row 1's last block only
    CodecMessage m;
    const auto x_hat = round_trip(*codec, x, m);
    double worst = 0;
    for (int64_t r = 0; r < n; ++r)
      for (int b0 = 0; b0 < kD; b0 += 12) {
        const int b1 = std::min(kD, b0 + 12);
        double absmax = 0;
        for (int e = b0; e < b1; ++e) absmax = std::max(absmax, std::abs(double(x[r * kD + e])));
        for (int e = b0; e < b1; ++e) {
          const double err = std::abs(double(x[r * kD + e]) - x_hat[r * kD + e]);
          EXPECT_LE(err, absmax / qmax / 2 * (1 + 1e-6)) << bits << " bits, row " << r << " entry " << e;
          worst = std::max(worst, err);
        }
      }
    EXPECT_GT(worst, 0.0) << "quantisation loses something";
    const auto g = gaussian(size_t(n * kD), 30);
    CodecGradient gm;
    codec->encode_gradient(n, g.data(), m, gm);
    std::vector<float> dx(g.size(), 7.0f);
    codec->decode_gradient(n, gm, m, dx.data());
    EXPECT_EQ(dx, g) << "straight-through";
  }
}

TEST(BoundaryCodec, EveryStageBuildsTheSameUAndEFixed) {
  const Scenario s = scenario_of(BoundaryMethod::subspace);
  const auto a = make_boundary_codec(s), b = make_boundary_codec(s);
  const auto U = subspace_basis(kD, kRank, boundary_seed(s));
  const auto E = fixed_embedding(kVocab, kD, boundary_seed(s));
  // Decoding coefficient e_j for token t gives U's column j plus E_fixed[t].
  for (int j = 0; j < kRank; ++j) {
    CodecMessage m;
    m.values.assign(kRank, 0.0f), m.values[j] = 1.0f;
    m.indices = {int32_t(j + 10)};
    std::vector<float> xa(kD), xb(kD);
    a->decode(1, m, xa.data());
    b->decode(1, m, xb.data());
    EXPECT_EQ(xa, xb);
    for (int e = 0; e < kD; ++e) EXPECT_EQ(xa[e], U[e * kRank + j] + E[size_t(j + 10) * kD + e]) << j << ", " << e;
  }
  EXPECT_NE(boundary_seed(scenario_of(BoundaryMethod::subspace, kRank, 6)), boundary_seed(s));
}

TEST(BoundaryCodec, BadKeysAreInputErrorsNamingThePath) {
  auto place_of = [](Scenario s) -> std::string {
    try {
      make_boundary_codec(s);
    } catch (const InputError& e) {
      return e.place();
    }
    return "no error";
  };
  for (auto method : {BoundaryMethod::subspace, BoundaryMethod::lowrank})
    for (int rank : {0, kD + 1}) EXPECT_EQ(place_of(scenario_of(method, rank)), "compression.boundary.rank");
  Scenario topk = scenario_of(BoundaryMethod::topk);
  topk.compression.boundary.topk_fraction = 0;
  EXPECT_EQ(place_of(topk), "compression.boundary.topk_fraction");
  Scenario bits = scenario_of(BoundaryMethod::quantize), block = bits;
  bits.compression.boundary.quantize_bits = 5;
  block.compression.boundary.quantize_block = 0;
  EXPECT_EQ(place_of(bits), "compression.boundary.quantize_bits");
  EXPECT_EQ(place_of(block), "compression.boundary.quantize_block");
  // A message from another process never reads outside E_fixed.
  CodecMessage m;
  m.values.assign(kRank, 0.0f), m.indices = {kVocab};
  std::vector<float> x(kD);
  EXPECT_THROW(make_boundary_codec(scenario_of(BoundaryMethod::subspace))->decode(1, m, x.data()), std::logic_error);
}

}  // namespace
}  // namespace lowband::compress
