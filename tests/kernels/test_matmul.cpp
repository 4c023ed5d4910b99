// matmul against a float64 reference for all four transpose combinations, with
// leading dimensions wider than the matrices, and its backward (dA = dC·Bᵀ as
// NT, dB = Aᵀ·dC as TN) against central finite differences.
#include <gtest/gtest.h>

#include <tuple>

#include "kernels/matmul.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels {
namespace {

using namespace test;

// Element (r, c) of op(X) for a row-major X with leading dimension ld.
template <typename T>
double op_at(const T* X, int64_t ld, Trans t, int64_t r, int64_t c) {
  return t == Trans::yes ? double(X[c * ld + r]) : double(X[r * ld + c]);
}

// C = alpha op(A) op(B) + beta C, all float64.
std::vector<double> ref_matmul(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, double alpha,
                               const std::vector<double>& A, int64_t lda,
                               const std::vector<double>& B, int64_t ldb, double beta,
                               std::vector<double> C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) s += op_at(A.data(), lda, ta, i, k) * op_at(B.data(), ldb, tb, k, j);
      C[size_t(i * ldc + j)] = alpha * s + (beta == 0.0 ? 0.0 : beta * C[size_t(i * ldc + j)]);
    }
  return C;
}

using Shape = std::tuple<int64_t, int64_t, int64_t>;  // M, N, K
constexpr float kPadSentinel = 12345.0f;               // must survive in C's padding

void check_matmul(Trans ta, Trans tb, Shape shape, float alpha, float beta, int64_t pad) {
  const auto [M, N, K] = shape;
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed) + " ta=" + std::to_string(int(ta)) + " tb=" +
               std::to_string(int(tb)) + " M,N,K=" + std::to_string(M) + "," +
               std::to_string(N) + "," + std::to_string(K) + " pad=" + std::to_string(pad));
  Rng rng(seed);
  const int64_t a_rows = ta == Trans::yes ? K : M, a_cols = ta == Trans::yes ? M : K;
  const int64_t b_rows = tb == Trans::yes ? N : K, b_cols = tb == Trans::yes ? K : N;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
  const auto A = random_floats(rng, size_t(a_rows * lda));
  const auto B = random_floats(rng, size_t(b_rows * ldb));
  std::vector<float> C = random_floats(rng, size_t(M * ldc));
  // beta == 0 must not read C: poison it so any read shows up as NaN.
  if (beta == 0.0f) poison(C);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = N; j < ldc; ++j) C[size_t(i * ldc + j)] = kPadSentinel;
  const auto expect = ref_matmul(ta, tb, M, N, K, alpha, to_double(A), lda, to_double(B), ldb,
                                 beta, to_double(C), ldc);

  cpu::matmul(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);

  std::vector<float> got_core;
  std::vector<double> want_core;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      if (j < N) {
        got_core.push_back(C[size_t(i * ldc + j)]);
        want_core.push_back(expect[size_t(i * ldc + j)]);
      } else {
        ASSERT_EQ(C[size_t(i * ldc + j)], kPadSentinel) << "padding written at " << i << "," << j;
      }
    }
  // K <= 200 products of O(1) values: fp32 rounding gives about sqrt(K)*6e-8.
  EXPECT_LT(rel_error(got_core, want_core), 1e-5);
}

class MatmulAllTransposes : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MatmulAllTransposes, MatchesFloat64Reference) {
  const Trans ta = Trans(std::get<0>(GetParam())), tb = Trans(std::get<1>(GetParam()));
  for (Shape s : {Shape{1, 1, 1}, Shape{17, 13, 29}, Shape{64, 48, 33}, Shape{130, 67, 201}}) {
    check_matmul(ta, tb, s, 1.0f, 0.0f, 0);
    check_matmul(ta, tb, s, 1.0f, 0.0f, 5);      // leading dims wider than the width
    check_matmul(ta, tb, s, 0.5f, 2.0f, 3);      // alpha and beta both used
  }
}

INSTANTIATE_TEST_SUITE_P(Matmul, MatmulAllTransposes,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "T" : "N") +
                                  (std::get<1>(info.param) ? "T" : "N");
                         });

// A linear layer's backward through matmul itself: for C = A·B and
// L = sum(G ∘ C), dL/dA = G·Bᵀ (NT) and dL/dB = Aᵀ·G (TN). Both are checked
// against central finite differences of L computed in float64.
TEST(Matmul, BackwardMatchesFiniteDifferences) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t M = 7, N = 5, K = 9;
  const auto A = random_floats(rng, size_t(M * K));
  const auto B = random_floats(rng, size_t(K * N));
  const auto G = random_floats(rng, size_t(M * N));
  const auto g = to_double(G);
  auto loss = [&](const std::vector<double>& a, const std::vector<double>& b) {
    return dot(g, ref_matmul(Trans::no, Trans::no, M, N, K, 1.0, a, K, b, N, 0.0,
                             std::vector<double>(size_t(M * N)), N));
  };
  const auto a64 = to_double(A), b64 = to_double(B);
  const auto num_dA = numeric_gradient([&](const std::vector<double>& a) { return loss(a, b64); }, a64);
  const auto num_dB = numeric_gradient([&](const std::vector<double>& b) { return loss(a64, b); }, b64);

  std::vector<float> dA(size_t(M * K)), dB(size_t(K * N));
  poison(dA);
  poison(dB);
  cpu::matmul(Trans::no, Trans::yes, M, K, N, 1.0f, G.data(), N, B.data(), N, 0.0f, dA.data(), K);
  cpu::matmul(Trans::yes, Trans::no, K, N, M, 1.0f, A.data(), K, G.data(), N, 0.0f, dB.data(), N);
  EXPECT_LT(rel_error(dA, num_dA), 1e-5);
  EXPECT_LT(rel_error(dB, num_dB), 1e-5);
}

}  // namespace
}  // namespace lowband::kernels
