// The K/V codecs split into the halves that run on different ranks
// (runtime/compress/kv_codec.h, codec_message.h): an owner's codec and receivers'
// codecs built from the same options, passing packed messages, give what one
// codec's forward/backward gives; gradients of several receivers sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "runtime/compress/baseline_codecs.h"
#include "runtime/compress/error_sums.h"
#include "runtime/compress/identity_codec.h"
#include "runtime/compress/mos_codec.h"
#include "test_mos_reference.h"

namespace lowband::compress {
namespace {

using test::gaussian;

constexpr int kHeads = 2, kDim = 8;

MosOptions mos(MosRotation rotation, KFrame frame, int warmup) {
  MosOptions o;
  o.layers = 2;
  o.kv_heads = kHeads;
  o.head_dim = kDim;
  o.k_rank = 3;
  o.v_rank = 5;
  o.warmup_steps = warmup;
  o.warm_start = warmup > 0;
  o.rotation = rotation;
  o.k_frame = frame;
  o.seed = 17;
  o.compress_final_layer = true;  // the codec on every layer (the final one has its own tests)
  return o;
}

struct Case {
  const char* name;
  std::function<std::unique_ptr<KvCodec>()> make;
  bool exact_backward;  // the gradient passes values through unchanged: sums match bit for bit
  bool compressing;     // at step 0 (else the MoS warm-up: identity)
};

std::vector<Case> cases() {
  const auto m = [](MosRotation r, KFrame f, int warmup) {
    return [=] { return std::unique_ptr<KvCodec>(new MosCodec(mos(r, f, warmup))); };
  };
  return {
      {"identity", [] { return std::unique_ptr<KvCodec>(new IdentityCodec(kHeads, kDim, 2)); }, true, true},
      {"topk", [] { return std::unique_ptr<KvCodec>(new TopkCodec(kHeads, kDim, 2, 0.2)); }, true, true},
      {"quantize4", [] { return std::unique_ptr<KvCodec>(new QuantizeCodec(kHeads, kDim, 2, 4, 16)); }, true, true},
      {"quantize8", [] { return std::unique_ptr<KvCodec>(new QuantizeCodec(kHeads, kDim, 2, 8, 16)); }, true, true},
      {"mos_learned_pre_rope", m(MosRotation::learned, KFrame::pre_rope, 0), false, true},
      {"mos_learned_post_rope", m(MosRotation::learned, KFrame::post_rope, 0), false, true},
      {"mos_fixed", m(MosRotation::fixed, KFrame::pre_rope, 0), false, true},
      {"mos_random", m(MosRotation::random, KFrame::pre_rope, 0), false, true},
      {"mos_warmup", m(MosRotation::learned, KFrame::pre_rope, 2), true, false},
  };
}

void randomize_params(KvCodec& codec, uint64_t seed) {
  const auto p = gaussian(size_t(codec.param_count()), seed, 0.3);
  std::copy(p.begin(), p.end(), codec.params());
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::abs(x)));
  return m;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
  return m;
}

class CodecSplit : public ::testing::TestWithParam<Case> {};

TEST_P(CodecSplit, OwnerAndThreeReceiversMatchOneObject) {
  const Case& c = GetParam();
  const int64_t n = 7, count = n * kHeads * kDim;
  const std::vector<int64_t> positions = {3, 4, 5, 6, 90, 91, 5000};
  for (KvTensor t : {KvTensor::k, KvTensor::v}) {
    SCOPED_TRACE(t == KvTensor::k ? "K" : "V");
    auto one = c.make(), owner = c.make();
    std::vector<std::unique_ptr<KvCodec>> receivers;
    for (int i = 0; i < 3; ++i) receivers.push_back(c.make());
    for (KvCodec* k : {one.get(), owner.get()}) k->begin_step(0), randomize_params(*k, 5);
    // Receivers' ψ differs: θ travels in the message, so it must not matter.
    for (auto& r : receivers) r->begin_step(0), randomize_params(*r, 99);
    const KvBlockId id{1, t, 2, 1, 0, positions.data()};
    const auto z = gaussian(size_t(count), 31);

    std::vector<float> z_hat_one(count);
    const double bytes = one->forward(id, n, z.data(), z_hat_one.data());
    CodecMessage message;
    owner->encode(id, n, z.data(), message);
    // Expect the modelled size of today's message; the layout the receiver sizes its recv with.
    EXPECT_EQ(message.wire_bytes, bytes);
    if (c.compressing) {
      EXPECT_EQ(message.wire_bytes, owner->message_bytes(t, n));
    }
    EXPECT_EQ(message.layout(), receivers[0]->message_layout(t, n));
    const auto packed = pack(message);
    EXPECT_EQ(packed.size(), packed_bytes(receivers[0]->message_layout(t, n)));
    for (auto& r : receivers) {
      CodecMessage got;
      unpack(packed.data(), packed.size(), got);
      std::vector<float> z_hat(count, -7.0f);
      r->decode(id, n, got, z_hat.data());
      EXPECT_EQ(z_hat, z_hat_one) << "a receiver sees what one object's forward gives, bit for bit";
    }
    const bool lossless = !c.compressing || std::string(c.name) == "identity";
    EXPECT_EQ(z_hat_one == z, lossless) << "compressing changes the block; the warm-up does not";

    // Each receiver's own partial; the one-object path gets their sum in the same order.
    std::vector<std::vector<float>> partials;
    for (int i = 0; i < 3; ++i) partials.push_back(gaussian(size_t(count), 40 + i));
    std::vector<float> summed(count);
    for (int64_t j = 0; j < count; ++j) summed[j] = (partials[0][j] + partials[1][j]) + partials[2][j];
    one->zero_grads();
    std::vector<float> dz_one(count, 0.0f), dz_split(count, 0.0f);
    const double grad_bytes = one->backward(id, n, summed.data(), dz_one.data());
    CodecGradient ring;  // the accumulator a ring passes on, each rank adding its part
    for (int i = 0; i < 3; ++i) {
      CodecGradient mine, got;
      receivers[size_t(i)]->encode_gradient(id, n, partials[size_t(i)].data(), mine);
      const auto bytes_out = pack(mine);
      EXPECT_EQ(bytes_out.size(), packed_gradient_bytes(owner->gradient_floats(t, n)));
      unpack(bytes_out.data(), bytes_out.size(), got);
      ring.add(got);
    }
    EXPECT_EQ(ring.wire_bytes, grad_bytes);
    if (c.compressing) {
      EXPECT_EQ(ring.wire_bytes, owner->gradient_message_bytes(t, n));
    }
    owner->zero_grads();
    owner->decode_gradient(id, n, ring, dz_split.data());

    ASSERT_GT(max_abs(dz_one), 0.0);
    const std::vector<float> psi_one(one->grads(), one->grads() + one->param_count());
    const std::vector<float> psi_split(owner->grads(), owner->grads() + owner->param_count());
    if (c.exact_backward) {
      EXPECT_EQ(dz_split, dz_one);
      EXPECT_EQ(psi_split, psi_one);
    } else {
      // Linear, but the receivers' dθ parts are rounded before they are summed:
      // expect agreement to fp32 rounding, 1e-6 of the largest entry.
      EXPECT_LE(max_abs_diff(dz_split, dz_one), 1e-6 * max_abs(dz_one));
      EXPECT_LE(max_abs_diff(psi_split, psi_one), 1e-6 * max_abs(psi_one));
      if (one->param_count() > 0) {
        EXPECT_GT(max_abs(psi_one), 0.0) << "a zero ψ gradient would prove nothing";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CodecSplit, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CodecMessage, PackUnpackRoundTripsEveryField) {
  CodecMessage m;
  m.values = {1.5f, -2.25f, 3e-30f};
  m.indices = {7, 0, 123456};
  m.codes = {0, 255, 17, 4};
  m.wire_bytes = 42.5;
  const auto buf = pack(m);
  // Expect 32 header bytes + 3·4 + 3·4 + 4 = 60.
  EXPECT_EQ(buf.size(), 60u);
  EXPECT_EQ(buf.size(), packed_bytes(m.layout()));
  CodecMessage got;
  unpack(buf.data(), buf.size(), got);
  EXPECT_EQ(got.values, m.values);
  EXPECT_EQ(got.indices, m.indices);
  EXPECT_EQ(got.codes, m.codes);
  EXPECT_EQ(got.wire_bytes, 42.5);
  // A buffer of the wrong size is an error of use, not a silent truncation.
  EXPECT_THROW(unpack(buf.data(), buf.size() - 1, got), std::logic_error);
  EXPECT_THROW(unpack(buf.data(), 8, got), std::logic_error);
  CodecGradient g;
  EXPECT_THROW(unpack(buf.data(), buf.size(), g), std::logic_error) << "a message is not a gradient";

  CodecGradient a{{1.0f, 2.0f}, 8.0};
  const auto gbuf = pack(a);
  EXPECT_EQ(gbuf.size(), packed_gradient_bytes(2));
  unpack(gbuf.data(), gbuf.size(), g);
  EXPECT_EQ(g.values, a.values);
  EXPECT_EQ(g.wire_bytes, 8.0);
}

TEST(CodecSplit, TopkDecodeRefusesAnIndexOutsideTheBlock) {
  TopkCodec owner(kHeads, kDim, 2, 0.2), receiver(kHeads, kDim, 2, 0.2);
  const int64_t n = 3;
  const auto z = gaussian(size_t(n * kHeads * kDim), 8);
  CodecMessage m;
  owner.encode({0, KvTensor::v, 0, 0, 0}, n, z.data(), m);
  std::vector<float> z_hat(z.size());
  receiver.decode({0, KvTensor::v, 0, 0, 0}, n, m, z_hat.data());  // a good message decodes
  m.indices.back() = int32_t(n * kHeads * kDim);  // one past the end
  EXPECT_THROW(receiver.decode({0, KvTensor::v, 0, 0, 0}, n, m, z_hat.data()), std::logic_error);
}

TEST(CodecGradient, AddSumsInOrderAndKeepsOneMessageSize) {
  CodecGradient acc;
  acc.add({{1.0f, 1e8f}, 12.0});  // an empty accumulator takes the first
  acc.add({{2.0f, 1.0f}, 12.0});
  acc.add({{3.0f, -1e8f}, 12.0});
  // Expect ((1 + 2) + 3, (1e8 + 1) + −1e8 = 0 in float: the order is the one given).
  EXPECT_EQ(acc.values, (std::vector<float>{6.0f, 0.0f}));
  EXPECT_EQ(acc.wire_bytes, 12.0);
  EXPECT_THROW(acc.add({{1.0f}, 12.0}), std::logic_error);
}

// MoS warm-up: two ranks each see their own blocks; after the all-reduce of the
// Gram sums both fit the same U₀, close to one codec seeing every block.
TEST(CodecSplit, MosGramSumsAllReduceToOneFit) {
  MosOptions o = mos(MosRotation::learned, KFrame::pre_rope, 1);
  MosCodec one(o), rank0(o), rank1(o);
  for (MosCodec* c : {&one, &rank0, &rank1}) c->begin_step(0);
  const std::vector<int64_t> positions = [] {
    std::vector<int64_t> p(64);
    for (int i = 0; i < 64; ++i) p[size_t(i)] = i;
    return p;
  }();
  for (int owner = 0; owner < 2; ++owner)
    for (int layer = 0; layer < 2; ++layer)
      for (KvTensor t : {KvTensor::k, KvTensor::v}) {
        const int64_t n = 32;
        const KvBlockId id{layer, t, owner, 0, 0, positions.data() + owner * n};
        const auto z = gaussian(size_t(n * kHeads * kDim), 100 + owner * 10 + layer * 2 + int(t));
        std::vector<float> z_hat(z.size());
        one.forward(id, n, z.data(), z_hat.data());
        CodecMessage m;
        (owner == 0 ? rank0 : rank1).encode(id, n, z.data(), m);
      }
  const GramSums g0 = rank0.gram_sums(), g1 = rank1.gram_sums(), all = one.gram_sums();
  // Expect one (d, d) Gram per (layer, tensor, head) = 2·2·2 keys.
  ASSERT_EQ(g0.gram_count, 8 * kDim * kDim);
  ASSERT_EQ(g0.row_count, 8);
  ASSERT_EQ(g1.gram_count, g0.gram_count);
  EXPECT_EQ(g0.rows[0], 32);
  // The all-reduce, in rank order, lands on both ranks.
  std::vector<float> grams(g0.grams, g0.grams + g0.gram_count);
  for (int64_t i = 0; i < g0.gram_count; ++i) grams[size_t(i)] += g1.grams[i];
  std::vector<int64_t> rows(g0.rows, g0.rows + g0.row_count);
  for (int64_t k = 0; k < g0.row_count; ++k) rows[size_t(k)] += g1.rows[k];
  for (const GramSums& g : {g0, g1}) {
    std::copy(grams.begin(), grams.end(), g.grams);
    std::copy(rows.begin(), rows.end(), g.rows);
  }
  EXPECT_EQ(rank1.gram_sums().rows[0], 64);
  for (int64_t i = 0; i < all.gram_count; ++i)
    EXPECT_NEAR(grams[size_t(i)], all.grams[i], 1e-5 * (1 + std::abs(all.grams[i])));
  for (MosCodec* c : {&one, &rank0, &rank1}) c->begin_step(1);
  EXPECT_EQ(rank0.gram_sums().grams, nullptr) << "nothing to sum once fitted";
  for (int layer = 0; layer < 2; ++layer)
    for (KvTensor t : {KvTensor::k, KvTensor::v})
      for (int h = 0; h < kHeads; ++h) {
        // Same sums, same U₀ bit for bit; within rounding of the one-object fit.
        EXPECT_EQ(rank0.u0(layer, t, h), rank1.u0(layer, t, h));
        const auto& a = rank0.u0(layer, t, h);
        const auto& b = one.u0(layer, t, h);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4) << "U0 entry " << i;
      }
}

// Owners add each block's error once; summing the ranks' sums gives the figure
// of one codec encoding every block.
TEST(CodecSplit, SummedErrorSumsReproduceOneCodecsReconstructionError) {
  const std::vector<Case> all = cases();
  for (const Case& c : all) {
    if (!c.compressing || std::string(c.name) == "identity") continue;
    SCOPED_TRACE(c.name);
    auto one = c.make(), rank0 = c.make(), rank1 = c.make();
    for (KvCodec* k : {one.get(), rank0.get(), rank1.get()}) k->begin_step(0), randomize_params(*k, 5);
    const std::vector<int64_t> positions = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    for (int layer = 0; layer < 2; ++layer)
      for (int owner = 0; owner < 2; ++owner)
        for (KvTensor t : {KvTensor::k, KvTensor::v}) {
          const int64_t n = 5;
          const KvBlockId id{layer, t, owner, 0, 0, positions.data() + owner * n};
          const auto z = gaussian(size_t(n * kHeads * kDim), 200 + owner * 10 + layer * 2 + int(t), 1 + owner);
          std::vector<float> z_hat(z.size());
          one->forward(id, n, z.data(), z_hat.data());
          CodecMessage m;
          (owner == 0 ? rank0 : rank1)->encode(id, n, z.data(), m);
        }
    ErrorSums* s0 = rank0->error_sums();
    ErrorSums* s1 = rank1->error_sums();
    ASSERT_NE(s0, nullptr);
    ASSERT_EQ(s0->size(), s1->size());
    const auto before = rank0->reconstruction_errors(KvTensor::k);
    for (int64_t i = 0; i < s0->size(); ++i) s0->data()[i] += s1->data()[i];
    for (KvTensor t : {KvTensor::k, KvTensor::v}) {
      const auto want = one->reconstruction_errors(t), got = rank0->reconstruction_errors(t);
      ASSERT_EQ(got.size(), 2u);
      ASSERT_EQ(want.size(), got.size());
      for (size_t l = 0; l < want.size(); ++l) {
        EXPECT_GT(want[l], 0.0);
        EXPECT_NEAR(got[l], want[l], 1e-12 * want[l]);
      }
    }
    EXPECT_NE(before, one->reconstruction_errors(KvTensor::k)) << "one rank's own sums alone are not the figure";
  }
}

}  // namespace
}  // namespace lowband::compress
