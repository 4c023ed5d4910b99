// CUDA versus CPU for attention, subspace compression and the compression
// baselines, table-driven: each row runs an op on both backends from the same
// random inputs (device outputs poisoned with NaN first) and requires
// ||cuda − cpu|| / ||cpu|| < 1e-5 (index and code outputs: equal). The CPU side
// is proven against float64 in test_attention*.cpp, test_subspace.cpp and
// test_compress.cpp. Skips where no GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kernels/device.h"

#ifdef LOWBAND_HAVE_CUDA
#include "kernels/attention.h"
#include "kernels/compress.h"
#include "kernels/subspace.h"
#include "tests/kernels/device_buffer.h"
#include "tests/kernels/reference.h"
#endif

namespace lowband::kernels {
namespace {

#ifdef LOWBAND_HAVE_CUDA
using namespace test;

template <typename T>
using OnDevice = DeviceVec<T>;

std::vector<float> nans(size_t n) {
  std::vector<float> v(n);
  poison(v);
  return v;
}

constexpr double kTol = 1e-5;

// Forward, merge, delta and backward for one shape; lse compared on finite rows.
void attention_case(Rng& rng, AttentionShape s) {
  s.scale = float(1.0 / std::sqrt(double(s.head_dim)));
  const size_t qn = size_t(s.nq * s.heads * s.head_dim),
               kn = size_t(s.nk * s.kv_heads * s.head_dim);
  const auto q = random_floats(rng, qn, -2, 2), k = random_floats(rng, kn, -2, 2),
             v = random_floats(rng, kn);
  const auto dout = random_floats(rng, qn);
  std::vector<float> out(qn), lse(s.heads * s.nq);
  cpu::attention_forward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
  DeviceVec<float> dq_(q), dk_(k), dv_(v), dout_(dout), dout_dev(nans(qn)), dlse(nans(lse.size()));
  cuda::attention_forward(s, dq_.get(), dk_.get(), dv_.get(), dout_dev.get(), dlse.get());
  EXPECT_LT(rel_error(dout_dev.to_host(), out), kTol) << "forward out";
  const auto lse_gpu = dlse.to_host();
  for (size_t e = 0; e < lse.size(); ++e) {
    if (std::isinf(lse[e])) {
      EXPECT_EQ(lse_gpu[e], lse[e]) << "lse row " << e;
    } else {
      EXPECT_NEAR(lse_gpu[e], lse[e], 1e-5 * (1 + std::fabs(lse[e]))) << "lse row " << e;
    }
  }
  // Merge with a second random partial result.
  auto out_b = random_floats(rng, qn), lse_b = random_floats(rng, lse.size(), -3, 3);
  std::vector<float> merged = out, merged_lse = lse;
  cpu::attention_merge(s.nq, s.heads, s.head_dim, merged.data(), merged_lse.data(), out_b.data(),
                       lse_b.data());
  DeviceVec<float> m_out(out), m_lse(lse), b_out(out_b), b_lse(lse_b);
  cuda::attention_merge(s.nq, s.heads, s.head_dim, m_out.get(), m_lse.get(), b_out.get(),
                        b_lse.get());
  EXPECT_LT(rel_error(m_out.to_host(), merged), kTol) << "merge out";
  EXPECT_LT(rel_error(m_lse.to_host(), merged_lse), kTol) << "merge lse";
  // Backward from the CPU's out and lse, accumulating onto random gradients.
  std::vector<float> delta(lse.size());
  cpu::attention_backward_delta(s.nq, s.heads, s.head_dim, out.data(), dout.data(), delta.data());
  DeviceVec<float> d_out(out), d_lse(lse), d_delta(nans(delta.size()));
  cuda::attention_backward_delta(s.nq, s.heads, s.head_dim, d_out.get(), dout_.get(),
                                 d_delta.get());
  EXPECT_LT(rel_error(d_delta.to_host(), delta), kTol) << "delta";
  auto gq = random_floats(rng, qn), gk = random_floats(rng, kn), gv = random_floats(rng, kn);
  DeviceVec<float> d_gq(gq), d_gk(gk), d_gv(gv), cpu_delta(delta);
  cpu::attention_backward(s, q.data(), k.data(), v.data(), lse.data(), delta.data(), dout.data(),
                          gq.data(), gk.data(), gv.data());
  cuda::attention_backward(s, dq_.get(), dk_.get(), dv_.get(), d_lse.get(), cpu_delta.get(),
                           dout_.get(), d_gq.get(), d_gk.get(), d_gv.get());
  EXPECT_LT(rel_error(d_gq.to_host(), gq), kTol) << "dq";
  EXPECT_LT(rel_error(d_gk.to_host(), gk), kTol) << "dk";
  EXPECT_LT(rel_error(d_gv.to_host(), gv), kTol) << "dv";
}

void subspace_case(Rng& rng, int64_t n, int64_t d, int64_t r, float theta) {
  // U₀: orthonormal, from the CPU's principal directions of random data.
  const auto noise_data = random_floats(rng, size_t(4 * d * d));
  std::vector<float> u0(d * r), a(d * d), au0(d * r), a2u0(d * r);
  cpu::principal_directions(4 * d, d, r, noise_data.data(), false, u0.data());
  // Data with a planted, well-separated spectrum in span(U₀) (scales 10, 8.5, ...,
  // so eigenvector comparisons are not at the mercy of tiny eigengaps).
  const int64_t rows = 4 * d;
  std::vector<float> data(rows * d);
  const auto w = random_floats(rng, size_t(rows * r)),
             jitter = random_floats(rng, data.size(), -1e-3f, 1e-3f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < d; ++j) {
      double x = jitter[i * d + j];
      for (int64_t c = 0; c < r; ++c) x += (10.0 - 1.5 * double(c)) * w[i * r + c] * u0[j * r + c];
      data[i * d + j] = float(x);
    }
  const auto raw = random_floats(rng, size_t(d * d));
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j) a[i * d + j] = raw[i * d + j] - raw[j * d + i];
  cpu::subspace_generator_products(d, r, a.data(), u0.data(), au0.data(), a2u0.data());
  DeviceVec<float> g_a(a), g_u0(u0), g_au0(nans(au0.size())), g_a2u0(nans(a2u0.size()));
  cuda::subspace_generator_products(d, r, g_a.get(), g_u0.get(), g_au0.get(), g_a2u0.get());
  EXPECT_LT(rel_error(g_au0.to_host(), au0), kTol) << "A·U₀";
  EXPECT_LT(rel_error(g_a2u0.to_host(), a2u0), kTol) << "A²·U₀";
  DeviceVec<float> c_au0(au0), c_a2u0(a2u0);  // the CPU's, so later rows test one op each
  const Subspace hs{d, r, u0.data(), au0.data(), a2u0.data()};
  const Subspace ds{d, r, g_u0.get(), c_au0.get(), c_a2u0.get()};

  const auto z = random_floats(rng, size_t(n * d)), gc = random_floats(rng, size_t(n * r));
  std::vector<float> c(n * r), zh(n * d), dz(n * d), dc(n * r);
  cpu::subspace_project(hs, theta, n, z.data(), c.data());
  cpu::subspace_reconstruct(hs, theta, n, c.data(), zh.data());
  const float dt1 = cpu::subspace_project_backward(hs, theta, n, z.data(), gc.data(), dz.data());
  const float dt2 = cpu::subspace_reconstruct_backward(hs, theta, n, c.data(), z.data(), dc.data());
  DeviceVec<float> g_z(z), g_gc(gc), g_c(c), g_cout(nans(c.size())), g_zh(nans(zh.size())),
      g_dz(nans(dz.size())), g_dc(nans(dc.size()));
  cuda::subspace_project(ds, theta, n, g_z.get(), g_cout.get());
  cuda::subspace_reconstruct(ds, theta, n, g_c.get(), g_zh.get());
  const float gt1 =
      cuda::subspace_project_backward(ds, theta, n, g_z.get(), g_gc.get(), g_dz.get());
  const float gt2 =
      cuda::subspace_reconstruct_backward(ds, theta, n, g_c.get(), g_z.get(), g_dc.get());
  EXPECT_LT(rel_error(g_cout.to_host(), c), kTol) << "project";
  EXPECT_LT(rel_error(g_zh.to_host(), zh), kTol) << "reconstruct";
  EXPECT_LT(rel_error(g_dz.to_host(), dz), kTol) << "project dZ";
  EXPECT_LT(rel_error(g_dc.to_host(), dc), kTol) << "reconstruct dC";
  EXPECT_NEAR(gt1, dt1, kTol * std::fabs(dt1)) << "project dθ";
  EXPECT_NEAR(gt2, dt2, kTol * std::fabs(dt2)) << "reconstruct dθ";
  // Principal directions: the same eigensolver on Gram matrices that differ by
  // fp32 rounding (cuBLAS vs oneDNN), so eigenvectors agree to that rounding
  // times λ_max / eigengap: 1e-4 with the planted spectrum.
  for (bool center : {false, true}) {
    std::vector<float> pu(d * r), pe(r), ge(r);
    cpu::principal_directions(rows, d, r, data.data(), center, pu.data(), pe.data());
    DeviceVec<float> g_data(data), g_pu(nans(pu.size()));
    cuda::principal_directions(rows, d, r, g_data.get(), center, g_pu.get(), ge.data());
    EXPECT_LT(rel_error(g_pu.to_host(), pu), 1e-4) << "principal directions";
    EXPECT_LT(rel_error(ge, pe), kTol) << "eigenvalues";
  }
}

void compress_case(Rng& rng, int64_t n, int64_t k, int bits, int64_t block) {
  const auto x = random_floats(rng, size_t(n), -4, 4);
  std::vector<float> values(k), y(n);
  std::vector<int32_t> indices(k);
  cpu::topk_compress(n, k, x.data(), values.data(), indices.data());
  cpu::topk_decompress(n, k, values.data(), indices.data(), y.data());
  DeviceVec<float> g_x(x), g_values(nans(k)), g_y(nans(n));
  DeviceVec<int32_t> g_indices(std::vector<int32_t>(k, -1));
  cuda::topk_compress(n, k, g_x.get(), g_values.get(), g_indices.get());
  cuda::topk_decompress(n, k, g_values.get(), g_indices.get(), g_y.get());
  EXPECT_EQ(g_indices.to_host(), indices) << "top-k indices";
  EXPECT_EQ(g_values.to_host(), values) << "top-k values";
  EXPECT_EQ(g_y.to_host(), y) << "top-k scatter";

  std::vector<uint8_t> codes(quantized_code_bytes(n, bits));
  std::vector<float> scales(quantized_scale_count(n, block)), xq(n);
  cpu::quantize_blockwise(n, bits, block, x.data(), codes.data(), scales.data());
  cpu::dequantize_blockwise(n, bits, block, codes.data(), scales.data(), xq.data());
  DeviceVec<uint8_t> g_codes(std::vector<uint8_t>(codes.size(), 0xAB));
  DeviceVec<float> g_scales(nans(scales.size())), g_xq(nans(n));
  cuda::quantize_blockwise(n, bits, block, g_x.get(), g_codes.get(), g_scales.get());
  cuda::dequantize_blockwise(n, bits, block, g_codes.get(), g_scales.get(), g_xq.get());
  EXPECT_EQ(g_scales.to_host(), scales) << "scales";
  EXPECT_EQ(g_codes.to_host(), codes) << "codes";
  EXPECT_EQ(g_xq.to_host(), xq) << "dequantised";
}

struct OpCase {
  std::string name;
  std::function<void(Rng&)> run;
};

std::vector<OpCase> cases() {
  return {
      {"attention causal GQA",
       [](Rng& r) {
         attention_case(r, {133, 133, 4, 2, 64, 0, 0, true});
       }},
      {"attention offsets hd 128",
       [](Rng& r) {
         attention_case(r, {70, 301, 2, 1, 128, 250, 0, true});
       }},
      {"attention masked block",
       [](Rng& r) {
         attention_case(r, {40, 50, 2, 2, 32, 0, 40, true});
       }},
      {"attention non-causal",
       [](Rng& r) {
         attention_case(r, {57, 190, 3, 3, 40, 0, 0, false});
       }},
      // Several 64-row tiles of the tiled kernels, partial last tiles, GQA 4:1.
      {"attention tiles GQA hd 128", [](Rng& r) { attention_case(r, {300, 300, 8, 2, 128, 0, 0, true}); }},
      // A later zigzag chunk against an earlier one: every key visible to some queries.
      {"attention zigzag offsets", [](Rng& r) { attention_case(r, {130, 200, 4, 4, 64, 520, 260, true}); }},
      // Keys that start after the queries: early query rows see no key at all.
      {"attention keys after queries", [](Rng& r) { attention_case(r, {100, 150, 2, 1, 64, 0, 30, true}); }},
      {"attention hd 24 one key", [](Rng& r) { attention_case(r, {65, 1, 3, 1, 24, 0, 0, false}); }},
      // head_dim > 128 runs the plain kernels.
      {"attention plain hd 160", [](Rng& r) { attention_case(r, {70, 90, 2, 1, 160, 10, 0, true}); }},
      {"subspace d 96 r 7", [](Rng& r) { subspace_case(r, 203, 96, 7, 0.21f); }},
      {"compress 8-bit", [](Rng& r) { compress_case(r, 10001, 1000, 8, 64); }},
      {"compress 4-bit", [](Rng& r) { compress_case(r, 9999, 37, 4, 37); }},
  };
}
#endif

TEST(AttentionSubspaceCompressCudaVsCpu, EveryOpAgrees) {
#ifndef LOWBAND_HAVE_CUDA
  GTEST_SKIP() << "no CUDA device: built without CUDA";
#else
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  for (const OpCase& c : cases()) {
    SCOPED_TRACE(c.name);
    c.run(rng);
  }
#endif
}

}  // namespace
}  // namespace lowband::kernels
