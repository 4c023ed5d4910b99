// Compression baselines: top-k against a float64 sort, block quantisation
// against the documented codes and its error bound, and the message sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/error.h"
#include "kernels/compress.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels::test {
namespace {

// Reference top-k: a full sort by (|x| desc, index asc), then the first k by index.
std::vector<int32_t> ref_topk(const std::vector<float>& x, int64_t k) {
  std::vector<int32_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) {
    return std::fabs(double(x[a])) > std::fabs(double(x[b]));
  });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

TEST(TopK, KeepsLargestMagnitudesWithDeterministicTiesAndScattersBack) {
  // Expectation: indices equal the reference sort's (ties to the lower index),
  // values are exactly x at those indices, and the scatter gives x there and 0
  // elsewhere. Cases: random, heavy ties (values in {±1, ±2}), k = 0 and k = n.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  auto ties = random_ints(rng, 999, -2, 2);
  std::vector<float> tied(ties.begin(), ties.end());
  struct Case {
    std::vector<float> x;
    int64_t k;
  };
  const Case cases[] = {{random_floats(rng, 1000), 100},
                        {tied, 333},
                        {random_floats(rng, 37), 0},
                        {random_floats(rng, 37), 37},
                        {random_floats(rng, 1), 1}};
  for (const Case& c : cases) {
    const int64_t n = int64_t(c.x.size());
    SCOPED_TRACE("n " + std::to_string(n) + " k " + std::to_string(c.k));
    std::vector<float> values(c.k), y(n);
    std::vector<int32_t> indices(c.k, -1);
    poison(values);
    poison(y);
    cpu::topk_compress(n, c.k, c.x.data(), values.data(), indices.data());
    EXPECT_EQ(indices, ref_topk(c.x, c.k));
    for (int64_t i = 0; i < c.k; ++i) EXPECT_EQ(values[i], c.x[indices[i]]);
    cpu::topk_decompress(n, c.k, values.data(), indices.data(), y.data());
    std::vector<float> expect(n, 0.0f);
    for (int32_t i : indices) expect[i] = c.x[i];
    EXPECT_EQ(y, expect);
  }
  EXPECT_EQ(topk_message_bytes(100), 800);
}

TEST(TopK, RejectsBadArguments) {
  std::vector<float> x(4, 1.0f), v(5);
  std::vector<int32_t> idx(5);
  try {
    cpu::topk_compress(4, 5, x.data(), v.data(), idx.data());
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "topk_compress.k");
  }
  idx[0] = 4;  // out of range for n = 4
  EXPECT_THROW(cpu::topk_decompress(4, 1, v.data(), idx.data(), x.data()), InputError);
}

// Code of element i by the documented layout.
int decode(const std::vector<uint8_t>& codes, int bits, int64_t i) {
  if (bits == 8) return int(int8_t(codes[i]));
  return int((codes[i / 2] >> (4 * (i % 2))) & 0xF) - 8;
}

TEST(Quantize, CodesFollowTheLayoutAndErrorIsAtMostHalfAScale) {
  // Expectation, per element (float64): scale_b = max|x| over its block / qmax
  // (qmax 127 or 7), code = round(x / scale_b) in [−qmax, qmax] (checked where
  // x / scale is not within 1e-4 of a rounding tie), x̂ = code · scale_b and
  // |x − x̂| ≤ scale_b / 2 (+ fp32 rounding: 1e-6 of the scale and of |x|).
  // Sizes: n odd (the last nibble is half used) and blocks that do not divide n.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t n = 1001;
  for (int bits : {8, 4}) {
    for (int64_t block : {32, 37, 64, 1001, 2000}) {
      SCOPED_TRACE("bits " + std::to_string(bits) + " block " + std::to_string(block));
      auto x = random_floats(rng, n, -3, 3);
      for (int64_t i = 0; i < std::min<int64_t>(block, n); ++i) x[i] = 0.0f;  // an all-zero block
      const int qmax = (1 << (bits - 1)) - 1;
      std::vector<uint8_t> codes(quantized_code_bytes(n, bits), 0xAB);
      std::vector<float> scales(quantized_scale_count(n, block)), y(n);
      poison(scales);
      poison(y);
      cpu::quantize_blockwise(n, bits, block, x.data(), codes.data(), scales.data());
      cpu::dequantize_blockwise(n, bits, block, codes.data(), scales.data(), y.data());
      for (int64_t b = 0; b < int64_t(scales.size()); ++b) {
        double absmax = 0.0;
        for (int64_t i = b * block; i < std::min(n, (b + 1) * block); ++i)
          absmax = std::max(absmax, std::fabs(double(x[i])));
        ASSERT_NEAR(scales[b], absmax / qmax, 1e-7 * absmax) << "block " << b;
      }
      if (bits == 4) {
        EXPECT_EQ(codes.back() >> 4, 8) << "unused high nibble holds code 0";
      }
      for (int64_t i = 0; i < n; ++i) {
        const double scale = scales[i / block];
        const int code = decode(codes, bits, i);
        ASSERT_LE(std::abs(code), qmax);
        ASSERT_EQ(y[i], float(code * scale));
        // Half a scale, plus fp32 rounding of x / scale near a tie (relative to
        // |x|, up to qmax scales: a seed failed by 1e-7 with a bound relative to
        // the scale alone) and of the product.
        ASSERT_LE(std::fabs(double(x[i]) - y[i]),
                  scale / 2 * (1 + 1e-6) + 1e-6 * std::fabs(double(x[i])) + 1e-30)
            << "element " << i;
        if (scale == 0.0) {
          ASSERT_EQ(code, 0);
          continue;
        }
        const double ratio = double(x[i]) / scale;
        if (std::fabs(std::fabs(ratio - std::floor(ratio)) - 0.5) > 1e-4) {
          ASSERT_EQ(code, int(std::lround(ratio))) << "element " << i;
        }
      }
    }
  }
}

TEST(Quantize, RepresentableValuesRoundTripExactly) {
  // Expectation: a block whose values are integer multiples of absmax / qmax
  // (here scale 0.5) decodes bit-exactly.
  const std::vector<float> x = {3.5f, -1.5f, 0.0f, 2.0f, -3.5f, 0.5f, 1.0f};  // 4-bit: scale 0.5
  std::vector<uint8_t> codes(quantized_code_bytes(7, 4));
  std::vector<float> scales(1), y(7);
  cpu::quantize_blockwise(7, 4, 7, x.data(), codes.data(), scales.data());
  cpu::dequantize_blockwise(7, 4, 7, codes.data(), scales.data(), y.data());
  EXPECT_EQ(scales[0], 0.5f);
  EXPECT_EQ(y, x);
}

TEST(Quantize, MessageSizesInBytes) {
  // Expectation: codes ceil(n·bits/8) bytes, plus 4 bytes per block of `block`.
  EXPECT_EQ(quantized_code_bytes(1001, 4), 501);
  EXPECT_EQ(quantized_code_bytes(1001, 8), 1001);
  EXPECT_EQ(quantized_scale_count(1001, 37), 28);
  EXPECT_EQ(quantized_message_bytes(1001, 4, 37), 501 + 4 * 28);
  EXPECT_EQ(quantized_message_bytes(4096, 8, 64), 4096 + 4 * 64);
  try {
    std::vector<float> x(4);
    std::vector<uint8_t> c(4);
    cpu::quantize_blockwise(4, 3, 2, x.data(), c.data(), x.data());
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "quantize_blockwise.bits");
  }
}

}  // namespace
}  // namespace lowband::kernels::test
