// The identity codec and the K/V baselines top-k and block quantisation
// (runtime/compress/identity_codec.h, baseline_codecs.h): bytes and error bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/error.h"
#include "runtime/compress/baseline_codecs.h"
#include "runtime/compress/drop_codec.h"
#include "runtime/compress/identity_codec.h"
#include "test_mos_reference.h"

namespace lowband::compress {
namespace {

const KvBlockId kId{2, KvTensor::k, 1, 1, 0};

TEST(IdentityCodec, IsExactAndCountsEveryElement) {
  IdentityCodec codec(4, 16, 2);
  const int64_t n = 9;
  const auto z = test::gaussian(n * 4 * 16, 1);
  std::vector<float> z_hat(z.size(), 0.0f), dz(z.size(), 2.0f);
  // Expect n·kv_heads·head_dim·bpe = 9·4·16·2 = 1152 bytes each way; z_hat == z; dz = 2 + dz_hat.
  EXPECT_EQ(codec.forward(kId, n, z.data(), z_hat.data()), 1152.0);
  EXPECT_EQ(z_hat, z);
  EXPECT_EQ(codec.backward(kId, n, z.data(), dz.data()), 1152.0);
  for (size_t i = 0; i < z.size(); ++i) EXPECT_EQ(dz[i], 2.0f + z[i]);
  EXPECT_EQ(codec.param_count(), 0);
}

// drop: nothing crosses either way; receivers see zeros and the owner's
// gradient gets nothing from them.
TEST(DropCodec, SendsNothingAndReceiversSeeZeros) {
  DropCodec codec(4, 16);
  const int64_t n = 9;
  const auto z = test::gaussian(n * 4 * 16, 1);
  std::vector<float> z_hat(z.size(), 7.0f), dz(z.size(), 2.0f);
  EXPECT_EQ(codec.forward(kId, n, z.data(), z_hat.data()), 0.0);
  EXPECT_TRUE(std::all_of(z_hat.begin(), z_hat.end(), [](float v) { return v == 0.0f; }));
  EXPECT_EQ(codec.backward(kId, n, z.data(), dz.data()), 0.0);
  EXPECT_TRUE(std::all_of(dz.begin(), dz.end(), [](float v) { return v == 2.0f; }));
  EXPECT_EQ(codec.message_bytes(KvTensor::v, n), 0.0);
  EXPECT_EQ(codec.gradient_message_bytes(KvTensor::v, n), 0.0);
}

TEST(TopkCodec, KeepsTheLargestFractionAndSendsValuesWithIndices) {
  TopkCodec codec(2, 8, 2, 0.1);
  codec.begin_step(0);
  const int64_t n = 10, count = n * 2 * 8;  // 160 entries: k = round(16.0) = 16
  const auto z = test::gaussian(count, 2);
  std::vector<float> z_hat(count);
  // Expect k·(bpe + 4 index bytes) = 16·6 = 96 forward, k·bpe = 32 back.
  EXPECT_EQ(codec.kept(n), 16);
  EXPECT_EQ(codec.forward(kId, n, z.data(), z_hat.data()), 96.0);
  std::vector<float> mags(count);
  for (int64_t i = 0; i < count; ++i) mags[i] = std::abs(z[i]);
  std::sort(mags.rbegin(), mags.rend());
  const float threshold = mags[15];  // the 16th largest |z|
  int kept = 0;
  double err_sq = 0, best_sq = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (z_hat[i] != 0.0f) {
      ++kept;
      EXPECT_EQ(z_hat[i], z[i]) << "kept entries are exact";
      EXPECT_GE(std::abs(z[i]), threshold);
    } else {
      EXPECT_LE(std::abs(z[i]), threshold);
    }
    err_sq += double(z[i] - z_hat[i]) * (z[i] - z_hat[i]);
  }
  for (int64_t i = 16; i < count; ++i) best_sq += double(mags[i]) * mags[i];
  EXPECT_EQ(kept, 16);
  // The error is that of the best 16-sparse approximation: the sum of the dropped squares.
  EXPECT_NEAR(err_sq, best_sq, 1e-9 * best_sq);

  // Backward: dz gains dz_hat exactly on the kept entries, nothing elsewhere.
  const auto g = test::gaussian(count, 3);
  std::vector<float> dz(count, 1.0f);
  EXPECT_EQ(codec.backward(kId, n, g.data(), dz.data()), 32.0);
  for (int64_t i = 0; i < count; ++i) EXPECT_EQ(dz[i], z_hat[i] != 0.0f ? 1.0f + g[i] : 1.0f);
  // A block not forwarded this step has nothing to go back through.
  codec.begin_step(1);
  EXPECT_THROW(codec.backward(kId, n, g.data(), dz.data()), std::logic_error);
}

TEST(QuantizeCodec, ErrorWithinHalfAScaleAndBytesAreCodesPlusScales) {
  for (int bits : {4, 8}) {
    QuantizeCodec codec(2, 48, 2, bits, 64);
    const int64_t n = 3, count = n * 2 * 48;  // 288 values: 5 blocks (the last one of 32)
    const auto z = test::gaussian(count, 4 + bits);
    std::vector<float> z_hat(count);
    // Expect ceil(288·bits/8) code bytes + 4·5 scale bytes (164 or 308); back: 288·bpe = 576.
    EXPECT_EQ(codec.forward(kId, n, z.data(), z_hat.data()), count * bits / 8 + 4 * 5);
    const double qmax = (1 << (bits - 1)) - 1;
    for (int64_t b = 0; b < 5; ++b) {
      float absmax = 0;
      for (int64_t i = b * 64; i < std::min<int64_t>(count, (b + 1) * 64); ++i) absmax = std::max(absmax, std::abs(z[i]));
      const double half_scale = absmax / qmax / 2;
      for (int64_t i = b * 64; i < std::min<int64_t>(count, (b + 1) * 64); ++i)
        EXPECT_LE(std::abs(double(z[i]) - z_hat[i]), half_scale * (1 + 1e-6)) << bits << " bits, entry " << i;
    }
    std::vector<float> dz(count, 0.0f);
    EXPECT_EQ(codec.backward(kId, n, z.data(), dz.data()), 576.0);
    EXPECT_EQ(dz, z) << "straight-through";
  }
}

TEST(QuantizeCodec, FourBitsErrIsLargerThanEightBits) {
  // The bounds above are not vacuous: 8-bit error is ~127/7 times smaller than 4-bit.
  const auto z = test::gaussian(512, 9);
  std::vector<float> a(512), b(512);
  QuantizeCodec(1, 64, 2, 4, 64).forward(kId, 8, z.data(), a.data());
  QuantizeCodec(1, 64, 2, 8, 64).forward(kId, 8, z.data(), b.data());
  const double e4 = test::relative_frobenius(z, a), e8 = test::relative_frobenius(z, b);
  EXPECT_GT(e4, 5 * e8);
  EXPECT_GT(e8, 0.0);
}

TEST(BaselineCodecs, BadParametersAreInputErrorsNamingTheKey) {
  const auto place = [](auto make) {
    try {
      make();
    } catch (const InputError& e) {
      return e.place();
    }
    return std::string("no error");
  };
  EXPECT_EQ(place([] { TopkCodec(1, 8, 2, 0.0); }), "compression.topk_fraction");
  EXPECT_EQ(place([] { TopkCodec(1, 8, 2, 1.5); }), "compression.topk_fraction");
  EXPECT_EQ(place([] { QuantizeCodec(1, 8, 2, 2, 64); }), "compression.bits");
  EXPECT_EQ(place([] { QuantizeCodec(1, 8, 2, 8, 0); }), "compression.block");
  EXPECT_EQ(place([] { IdentityCodec(0, 8, 2); }), "model.kv_heads");
}

}  // namespace
}  // namespace lowband::compress
