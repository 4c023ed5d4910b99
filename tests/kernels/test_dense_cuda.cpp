// CUDA versus CPU for every dense op (matmul, embedding, rmsnorm, rope, swiglu,
// cross_entropy, adamw, grad norm/clip), table-driven: each row runs the op on
// both backends from the same random inputs (device outputs poisoned with NaN
// first) and requires ||cuda − cpu|| / ||cpu|| < 1e-5. The CPU side is itself
// proven against float64 in the other test files. Skips where no GPU is present.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "kernels/device.h"

#ifdef LOWBAND_HAVE_CUDA
#include "kernels/adamw.h"
#include "kernels/cross_entropy.h"
#include "kernels/embedding.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "kernels/backend_buffer.h"
#include "kernels/elementwise.h"
#include "tests/kernels/device_buffer.h"
#include "tests/kernels/reference.h"
#endif

namespace lowband::kernels {
namespace {

#ifdef LOWBAND_HAVE_CUDA
using namespace test;

// Owns a device copy of a host vector.

template <typename T>
std::vector<T> nan_vec(size_t n) {
  std::vector<T> v(n);
  poison(v);
  return v;
}

constexpr double kTol = 1e-5;

struct OpCase {
  std::string name;
  std::function<void(Rng&)> run;  // asserts on its own
};
// Names the case in test output (gtest would otherwise dump its bytes).
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

void matmul_case(Rng& rng, Trans ta, Trans tb) {
  const int64_t M = 130, N = 67, K = 201, pad = 3;
  const int64_t lda = (ta == Trans::yes ? M : K) + pad, ldb = (tb == Trans::yes ? K : N) + pad;
  const int64_t ldc = N + pad;
  const auto A = random_floats(rng, size_t((ta == Trans::yes ? K : M) * lda));
  const auto B = random_floats(rng, size_t((tb == Trans::yes ? N : K) * ldb));
  auto C = random_floats(rng, size_t(M * ldc));
  DeviceVec<float> dA(A), dB(B), dC(C);
  cpu::matmul(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, C.data(), ldc);
  cuda::matmul(ta, tb, M, N, K, 0.5f, dA.get(), lda, dB.get(), ldb, 2.0f, dC.get(), ldc);
  EXPECT_LT(rel_error(dC.to_host(), C), kTol);
}

void embedding_case(Rng& rng) {
  const int64_t n = 300, vocab = 50, d = 301;
  const auto ids = random_ints(rng, size_t(n), 0, int32_t(vocab - 1));
  const auto table = random_floats(rng, size_t(vocab * d));
  const auto dout = random_floats(rng, size_t(n * d));
  auto dtable = random_floats(rng, size_t(vocab * d));
  DeviceVec<int32_t> d_ids(ids);
  DeviceVec<float> d_table(table), d_out(nan_vec<float>(size_t(n * d))), d_dout(dout),
      d_dtable(dtable);
  std::vector<float> out(size_t(n * d));
  cpu::embedding_forward(ids.data(), n, table.data(), vocab, d, out.data());
  cuda::embedding_forward(d_ids.get(), n, d_table.get(), vocab, d, d_out.get());
  EXPECT_LT(rel_error(d_out.to_host(), out), kTol);
  cpu::embedding_backward(ids.data(), n, dout.data(), vocab, d, dtable.data());
  cuda::embedding_backward(d_ids.get(), n, d_dout.get(), vocab, d, d_dtable.get());
  EXPECT_LT(rel_error(d_dtable.to_host(), dtable), kTol);
}

void rmsnorm_case(Rng& rng) {
  const int64_t n = 100, d = 333;
  const auto x = random_floats(rng, size_t(n * d), -2.0f, 2.0f);
  const auto w = random_floats(rng, size_t(d), 0.5f, 1.5f);
  const auto dy = random_floats(rng, size_t(n * d));
  auto dw = random_floats(rng, size_t(d));
  std::vector<float> y(x.size()), rstd(static_cast<size_t>(n)), dx(x.size());
  DeviceVec<float> d_x(x), d_w(w), d_dy(dy), d_dw(dw), d_y(nan_vec<float>(x.size())),
      d_rstd(nan_vec<float>(size_t(n))), d_dx(nan_vec<float>(x.size()));
  cpu::rmsnorm_forward(x.data(), w.data(), n, d, 1e-5f, y.data(), rstd.data());
  cuda::rmsnorm_forward(d_x.get(), d_w.get(), n, d, 1e-5f, d_y.get(), d_rstd.get());
  EXPECT_LT(rel_error(d_y.to_host(), y), kTol);
  EXPECT_LT(rel_error(d_rstd.to_host(), rstd), kTol);
  cpu::rmsnorm_backward(dy.data(), x.data(), w.data(), rstd.data(), n, d, dx.data(), dw.data());
  cuda::rmsnorm_backward(d_dy.get(), d_x.get(), d_w.get(), d_rstd.get(), n, d, d_dx.get(),
                         d_dw.get());
  EXPECT_LT(rel_error(d_dx.to_host(), dx), kTol);
  EXPECT_LT(rel_error(d_dw.to_host(), dw), kTol);
}

void rope_case(Rng& rng) {
  const int64_t n = 40, heads = 8, hd = 128;
  const auto x = random_floats(rng, size_t(n * heads * hd));
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (auto& p : pos) p = std::uniform_int_distribution<int64_t>(0, 200000)(rng);
  std::vector<float> out(x.size()), dx(x.size());
  DeviceVec<float> d_x(x), d_out(nan_vec<float>(x.size())), d_dx(nan_vec<float>(x.size()));
  DeviceVec<int64_t> d_pos(pos);
  cpu::rope_forward(x.data(), pos.data(), n, heads, hd, out.data(), 500000.0f);
  cuda::rope_forward(d_x.get(), d_pos.get(), n, heads, hd, d_out.get(), 500000.0f);
  EXPECT_LT(rel_error(d_out.to_host(), out), kTol);
  cpu::rope_backward(x.data(), pos.data(), n, heads, hd, dx.data());
  cuda::rope_backward(d_x.get(), d_pos.get(), n, heads, hd, d_dx.get());
  EXPECT_LT(rel_error(d_dx.to_host(), dx), kTol);
}

void swiglu_case(Rng& rng) {
  const int64_t n = 129, f = 771;
  const size_t count = size_t(n * f);
  const auto a = random_floats(rng, count, -12.0f, 12.0f), b = random_floats(rng, count);
  const auto dout = random_floats(rng, count);
  std::vector<float> out(count), da(count), db(count);
  DeviceVec<float> d_a(a), d_b(b), d_dout(dout), d_out(nan_vec<float>(count)),
      d_da(nan_vec<float>(count)), d_db(nan_vec<float>(count));
  cpu::swiglu_forward(a.data(), b.data(), n, f, out.data());
  cuda::swiglu_forward(d_a.get(), d_b.get(), n, f, d_out.get());
  EXPECT_LT(rel_error(d_out.to_host(), out), kTol);
  cpu::swiglu_backward(dout.data(), a.data(), b.data(), n, f, da.data(), db.data());
  cuda::swiglu_backward(d_dout.get(), d_a.get(), d_b.get(), n, f, d_da.get(), d_db.get());
  EXPECT_LT(rel_error(d_da.to_host(), da), kTol);
  EXPECT_LT(rel_error(d_db.to_host(), db), kTol);
}

void cross_entropy_case(Rng& rng, int64_t n, int64_t V) {
  auto logits = random_floats(rng, size_t(n * V), -10.0f, 10.0f);
  auto targets = random_ints(rng, size_t(n), 0, int32_t(V - 1));
  targets[1] = -1;
  std::vector<float> losses(static_cast<size_t>(n)), lse(static_cast<size_t>(n)),
      dlogits(logits.size());
  DeviceVec<float> d_logits(logits), d_losses(nan_vec<float>(size_t(n))),
      d_lse(nan_vec<float>(size_t(n))), d_dlogits(nan_vec<float>(logits.size()));
  DeviceVec<int32_t> d_targets(targets);
  const float mean = cpu::cross_entropy_forward(logits.data(), targets.data(), n, V,
                                                losses.data(), lse.data());
  const float d_mean = cuda::cross_entropy_forward(d_logits.get(), d_targets.get(), n, V,
                                                   d_losses.get(), d_lse.get());
  EXPECT_NEAR(d_mean, mean, kTol * std::abs(mean));
  EXPECT_LT(rel_error(d_losses.to_host(), losses), kTol);
  EXPECT_LT(rel_error(d_lse.to_host(), lse), kTol);
  cpu::cross_entropy_backward(logits.data(), targets.data(), lse.data(), n, V, dlogits.data(), 0.5f);
  cuda::cross_entropy_backward(d_logits.get(), d_targets.get(), d_lse.get(), n, V,
                               d_dlogits.get(), 0.5f);
  EXPECT_LT(rel_error(d_dlogits.to_host(), dlogits), kTol);
}

void adamw_case(Rng& rng) {
  const int64_t count = 100003;
  auto p = random_floats(rng, size_t(count));
  auto m = random_floats(rng, size_t(count), -0.1f, 0.1f);
  auto v = random_floats(rng, size_t(count), 0.0f, 0.01f);
  auto g = random_floats(rng, size_t(count), -0.1f, 0.1f);
  DeviceVec<float> d_p(p), d_m(m), d_v(v), d_g(g);
  AdamWConfig config;
  config.lr = 0.1f;
  config.weight_decay = 0.1f;
  cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), count, 7, config);
  cuda::adamw_step(d_p.get(), d_g.get(), d_m.get(), d_v.get(), count, 7, config);
  EXPECT_LT(rel_error(d_p.to_host(), p), kTol);
  EXPECT_LT(rel_error(d_m.to_host(), m), kTol);
  EXPECT_LT(rel_error(d_v.to_host(), v), kTol);
  const double norm = cpu::global_grad_norm(g.data(), count);
  EXPECT_NEAR(cuda::global_grad_norm(d_g.get(), count), norm, 1e-12 * norm);
  EXPECT_NEAR(cuda::clip_grad_norm(d_g.get(), count, 0.5 * norm), norm, 1e-12 * norm);
  cpu::clip_grad_norm(g.data(), count, 0.5 * norm);
  EXPECT_LT(rel_error(d_g.to_host(), g), kTol);
}

// add_inplace and scale_inplace, and the backend table's memory operations.
void elementwise_case(Rng& rng) {
  const int64_t count = 70001;
  auto y = random_floats(rng, size_t(count));
  const auto x = random_floats(rng, size_t(count));
  DeviceVec<float> d_y(y), d_x(x);
  cpu::add_inplace(y.data(), x.data(), count);
  cuda::add_inplace(d_y.get(), d_x.get(), count);
  cpu::scale_inplace(y.data(), -0.37f, count);
  cuda::scale_inplace(d_y.get(), -0.37f, count);
  EXPECT_EQ(d_y.to_host(), y);  // one rounding each: bit-equal
  const Backend& g = backend(Device::cuda);
  BackendBuffer<float> a(g, x), b(g, size_t(count));
  g.copy(b.data(), a.data(), size_t(count) * sizeof(float));
  EXPECT_EQ(b.to_host(), x);
  g.zero(b.data(), 16 * sizeof(float));
  const auto zeroed = b.to_host();
  EXPECT_EQ(std::vector<float>(zeroed.begin(), zeroed.begin() + 16), std::vector<float>(16, 0.0f));
  EXPECT_EQ(zeroed[16], x[16]);
}

std::vector<OpCase> dense_cases() {
  return {
      {"matmul_NN", [](Rng& r) { matmul_case(r, Trans::no, Trans::no); }},
      {"matmul_NT", [](Rng& r) { matmul_case(r, Trans::no, Trans::yes); }},
      {"matmul_TN", [](Rng& r) { matmul_case(r, Trans::yes, Trans::no); }},
      {"matmul_TT", [](Rng& r) { matmul_case(r, Trans::yes, Trans::yes); }},
      {"embedding", embedding_case},
      {"rmsnorm", rmsnorm_case},
      {"rope", rope_case},
      {"swiglu", swiglu_case},
      {"cross_entropy_small", [](Rng& r) { cross_entropy_case(r, 33, 1001); }},
      {"cross_entropy_gpt2_vocab", [](Rng& r) { cross_entropy_case(r, 6, 50257); }},
      {"adamw_and_clip", adamw_case},
      {"elementwise_and_backend_memory", elementwise_case},
  };
}

class DenseCudaVsCpu : public ::testing::TestWithParam<OpCase> {};

TEST_P(DenseCudaVsCpu, MatchesCpu) {
  std::string why;
  if (!cuda_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  GetParam().run(rng);
}

INSTANTIATE_TEST_SUITE_P(Dense, DenseCudaVsCpu, ::testing::ValuesIn(dense_cases()),
                         [](const auto& info) { return info.param.name; });
#else
TEST(DenseCudaVsCpu, MatchesCpu) { GTEST_SKIP() << "built without CUDA (no nvcc at configure time)"; }
#endif

}  // namespace
}  // namespace lowband::kernels
