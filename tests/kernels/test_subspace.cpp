// Subspace compression: U(θ) against the float64 matrix exponential,
// project/reconstruct against float64 products, gradient checks by finite
// differences, and principal directions against a planted subspace and a
// float64 power-iteration reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "kernels/subspace.h"
#include "tests/kernels/reference.h"

namespace lowband::kernels::test {
namespace {

using Mat = std::vector<double>;  // row-major

// a (m, k) · b (k, n), float64; tb: b given as (n, k).
Mat mul(const Mat& a, const Mat& b, int64_t m, int64_t k, int64_t n, bool ta = false,
        bool tb = false) {
  Mat c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double x = ta ? a[p * m + i] : a[i * k + p];
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += x * (tb ? b[j * k + p] : b[p * n + j]);
    }
  return c;
}

// d x r with orthonormal columns (Gram-Schmidt in double on random columns).
Mat random_orthonormal(Rng& rng, int64_t d, int64_t r) {
  Mat u = to_double(random_floats(rng, d * r));
  for (int64_t c = 0; c < r; ++c) {
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t p = 0; p < c; ++p) {
        double dot = 0.0;
        for (int64_t i = 0; i < d; ++i) dot += u[i * r + c] * u[i * r + p];
        for (int64_t i = 0; i < d; ++i) u[i * r + c] -= dot * u[i * r + p];
      }
    double norm = 0.0;
    for (int64_t i = 0; i < d; ++i) norm += u[i * r + c] * u[i * r + c];
    for (int64_t i = 0; i < d; ++i) u[i * r + c] /= std::sqrt(norm);
  }
  return u;
}

std::vector<float> to_float(const Mat& m) { return std::vector<float>(m.begin(), m.end()); }

// A fixed subspace problem: U₀ orthonormal, A skew-symmetric with entries
// ~ 1/sqrt(d) (so ||A|| = O(1)), the products made by the kernel under test's
// sibling subspace_generator_products.
struct Problem {
  int64_t d, r;
  std::vector<float> u0, a, au0, a2u0;
  Subspace sub() const { return {d, r, u0.data(), au0.data(), a2u0.data()}; }
  Mat basis(double theta) const {  // float64 U(θ) from the same float inputs
    Mat u(d * r);
    for (int64_t e = 0; e < d * r; ++e)
      u[e] = u0[e] + theta * au0[e] + 0.5 * theta * theta * a2u0[e];
    return u;
  }
};

Problem make_problem(Rng& rng, int64_t d, int64_t r) {
  Problem p{d, r, to_float(random_orthonormal(rng, d, r)), std::vector<float>(d * d), {}, {}};
  auto raw = random_floats(rng, d * d);
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j)
      p.a[i * d + j] = (raw[i * d + j] - raw[j * d + i]) / std::sqrt(float(d));
  p.au0.resize(d * r);
  p.a2u0.resize(d * r);
  cpu::subspace_generator_products(d, r, p.a.data(), p.u0.data(), p.au0.data(), p.a2u0.data());
  return p;
}

TEST(Subspace, BasisAtThetaZeroIsU0AndExpansionMatchesMatrixExponential) {
  // Expectation: U(0) = U₀ exactly. For small θ, U(θ) − exp(θA)·U₀ and
  // U(θ)ᵀU(θ) − I are O(θ³) (the truncated series' remainder; the second is in
  // fact O(θ⁴)), so halving θ divides both by at least ~8. exp(θA) is summed in
  // float64 to 30 terms (exact to double rounding at ||θA|| < 1).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const Problem p = make_problem(rng, 40, 6);
  std::vector<float> u(p.d * p.r);
  poison(u);
  cpu::subspace_basis(p.sub(), 0.0f, u.data());
  for (size_t e = 0; e < u.size(); ++e) ASSERT_EQ(u[e], p.u0[e]);

  const Mat a = to_double(p.a), u0 = to_double(p.u0);
  double prev_exp_err = 0, prev_orth_err = 0;
  for (double theta : {0.2, 0.1, 0.05}) {
    poison(u);
    cpu::subspace_basis(p.sub(), float(theta), u.data());
    Mat term = u0, expu = u0;  // Σ (θA)^k U₀ / k!
    for (int k = 1; k < 30; ++k) {
      term = mul(a, term, p.d, p.d, p.r);
      for (auto& t : term) t *= theta / k;
      for (size_t e = 0; e < expu.size(); ++e) expu[e] += term[e];
    }
    const Mat ud = to_double(u);
    double exp_err = 0.0;
    for (size_t e = 0; e < ud.size(); ++e) exp_err += (ud[e] - expu[e]) * (ud[e] - expu[e]);
    exp_err = std::sqrt(exp_err);
    const Mat gram = mul(ud, ud, p.r, p.d, p.r, /*ta=*/true);
    double orth_err = 0.0;
    for (int64_t i = 0; i < p.r; ++i)
      for (int64_t j = 0; j < p.r; ++j) orth_err += std::pow(gram[i * p.r + j] - (i == j), 2);
    orth_err = std::sqrt(orth_err);
    SCOPED_TRACE("theta " + std::to_string(theta));
    EXPECT_LT(exp_err, 2.0 * theta * theta * theta);  // |remainder| <= θ³||A||³/6 · e^θ||A||
    EXPECT_LT(orth_err, 2.0 * theta * theta * theta);
    if (prev_exp_err > 0) {
      EXPECT_GT(prev_exp_err / exp_err, 6.0);
      EXPECT_GT(prev_orth_err / orth_err, 6.0);
    }
    prev_exp_err = exp_err;
    prev_orth_err = orth_err;
  }
}

TEST(Subspace, ProjectAndReconstructMatchFloat64AndInvertOnTheSpan) {
  // Expectation: C = Z·U(θ) and Ẑ = C·U(θ)ᵀ equal the float64 products (rel.
  // error < 1e-5), and for Z = W·U(θ)ᵀ (rows in the span) reconstruct∘project
  // returns Z: exactly in exact arithmetic at θ = 0, to O(θ⁴) non-orthonormality
  // (1e-8 at θ = 0.01) otherwise.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const Problem p = make_problem(rng, 67, 9);
  const int64_t n = 131;
  for (double theta : {0.0, 0.01, 0.3}) {
    SCOPED_TRACE("theta " + std::to_string(theta));
    const Mat ub = p.basis(theta);
    auto z = random_floats(rng, n * p.d);
    std::vector<float> c(n * p.r), zh(n * p.d);
    poison(c);
    cpu::subspace_project(p.sub(), float(theta), n, z.data(), c.data());
    EXPECT_LT(rel_error(c, mul(to_double(z), ub, n, p.d, p.r)), 1e-5);
    poison(zh);
    cpu::subspace_reconstruct(p.sub(), float(theta), n, c.data(), zh.data());
    EXPECT_LT(rel_error(zh, mul(to_double(c), ub, n, p.r, p.d, false, true)), 1e-5);

    if (theta > 0.1) continue;  // U(0.3) is not orthonormal enough to invert
    const auto w = random_floats(rng, n * p.r);
    const auto zs = to_float(mul(to_double(w), ub, n, p.r, p.d, false, true));
    poison(c);
    poison(zh);
    cpu::subspace_project(p.sub(), float(theta), n, zs.data(), c.data());
    cpu::subspace_reconstruct(p.sub(), float(theta), n, c.data(), zh.data());
    EXPECT_LT(rel_error(zh, zs), 1e-5);
  }
}

TEST(Subspace, BackwardsMatchFiniteDifferences) {
  // Expectation: for L = ⟨G, project(Z, θ)⟩ and L = ⟨G, reconstruct(C, θ)⟩ in
  // float64, central differences (h = 1e-4) equal the kernels' dZ, dC (rel.
  // error < 1e-5) and dθ (rel. error < 1e-5; see theta_error).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const Problem p = make_problem(rng, 23, 5);
  const int64_t n = 17;
  const double theta = 0.37;
  auto proj64 = [&](const Mat& z, double t) { return mul(z, p.basis(t), n, p.d, p.r); };
  auto rec64 = [&](const Mat& c, double t) { return mul(c, p.basis(t), n, p.r, p.d, false, true); };
  // dθ is one inner product ⟨G, ∂Y/∂θ⟩ of many fp32 terms. For some seeds they
  // nearly cancel, and then the float32 rounding of the terms, not a wrong
  // gradient, dominates |dθ − fd| / |fd| (a seed failed at 1.4e-5). So the error
  // is relative to the larger of |fd| and 1 % of the Cauchy–Schwarz size
  // ‖G‖·‖∂Y/∂θ‖ of the terms: a wrong dθ still fails by orders of magnitude.
  auto theta_error = [](float got, double fd, const Mat& g, const Mat& y_plus, const Mat& y_minus) {
    double g2 = 0, dy2 = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const double dy = (y_plus[i] - y_minus[i]) / 2e-4;
      g2 += g[i] * g[i];
      dy2 += dy * dy;
    }
    return std::abs(double(got) - fd) / std::max(std::abs(fd), 1e-2 * std::sqrt(g2 * dy2));
  };

  auto z = random_floats(rng, n * p.d), gc = random_floats(rng, n * p.r);
  std::vector<float> dz(z.size());
  poison(dz);
  const float dtheta =
      cpu::subspace_project_backward(p.sub(), float(theta), n, z.data(), gc.data(), dz.data());
  const Mat zd = to_double(z), gcd = to_double(gc);
  const auto fd_z = numeric_gradient([&](const Mat& x) { return dot(proj64(x, theta), gcd); }, zd);
  const auto fd_t =
      numeric_gradient([&](const Mat& t) { return dot(proj64(zd, t[0]), gcd); }, {theta});
  EXPECT_LT(rel_error(dz, fd_z), 1e-5);
  EXPECT_LT(theta_error(dtheta, fd_t[0], gcd, proj64(zd, theta + 1e-4), proj64(zd, theta - 1e-4)), 1e-5);

  auto c = random_floats(rng, n * p.r), gz = random_floats(rng, n * p.d);
  std::vector<float> dc(c.size());
  poison(dc);
  const float dtheta2 =
      cpu::subspace_reconstruct_backward(p.sub(), float(theta), n, c.data(), gz.data(), dc.data());
  const Mat cd = to_double(c), gzd = to_double(gz);
  const auto fd_c = numeric_gradient([&](const Mat& x) { return dot(rec64(x, theta), gzd); }, cd);
  const auto fd_t2 =
      numeric_gradient([&](const Mat& t) { return dot(rec64(cd, t[0]), gzd); }, {theta});
  EXPECT_LT(rel_error(dc, fd_c), 1e-5);
  EXPECT_LT(theta_error(dtheta2, fd_t2[0], gzd, rec64(cd, theta + 1e-4), rec64(cd, theta - 1e-4)), 1e-5);
}

TEST(Subspace, PrincipalDirectionsRecoverPlantedSubspaceAndMatchFloat64) {
  // Expectation: Z = W·Bᵀ + 1e-3 noise with B (d, r) orthonormal and the columns
  // of W scaled 9, 7, 5, 3.5, 2.5: the returned U₀ is orthonormal (1e-5), spans B
  // (||U₀U₀ᵀ − BBᵀ|| < 1e-3, the noise level), and equals the float64 top
  // eigenpairs of ZᵀZ from power iteration with deflation (eigenvalues 1e-5;
  // vectors 1e-4: the Gram matrix is formed in fp32, and eigenvector error is
  // that rounding times λ_max / gap).
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(seed_note(seed));
  Rng rng(seed);
  const int64_t n = 500, d = 48, r = 5;
  const double scales[r] = {9, 7, 5, 3.5, 2.5};
  const Mat b = random_orthonormal(rng, d, r);
  for (bool center : {false, true}) {
    SCOPED_TRACE(center ? "centred" : "uncentred");
    Mat w = to_double(random_floats(rng, n * r));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < r; ++j) w[i * r + j] *= scales[j];
    Mat zd = mul(w, b, n, r, d, false, true);
    const auto noise = random_floats(rng, n * d, -1e-3f, 1e-3f);
    for (size_t e = 0; e < zd.size(); ++e) zd[e] += noise[e];
    // Centred case: add a large common offset orthogonal to nothing in
    // particular; centring must remove it again.
    const auto offset = random_floats(rng, d, -20, 20);
    if (center)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < d; ++j) zd[i * d + j] += offset[j];
    const auto z = to_float(zd);
    std::vector<float> u(d * r), ev(r);
    poison(u);
    poison(ev);
    cpu::principal_directions(n, d, r, z.data(), center, u.data(), ev.data());
    const Mat ud = to_double(u);
    const Mat gram_u = mul(ud, ud, r, d, r, true);
    Mat eye(r * r, 0.0);
    for (int64_t i = 0; i < r; ++i) eye[i * r + i] = 1.0;
    EXPECT_LT(rel_error(gram_u, eye), 1e-5);
    EXPECT_LT(rel_error(mul(ud, ud, d, r, d, false, true), mul(b, b, d, r, d, false, true)), 1e-3);

    // float64 reference: power iteration with deflation on the (centred) Gram.
    Mat zc = zd;
    if (center)
      for (int64_t j = 0; j < d; ++j) {
        double m = 0.0;
        for (int64_t i = 0; i < n; ++i) m += zc[i * d + j];
        for (int64_t i = 0; i < n; ++i) zc[i * d + j] -= m / n;
      }
    Mat g = mul(zc, zc, d, n, d, true);
    std::vector<double> ref_vals;
    Mat ref_vecs(d * r);
    for (int64_t c = 0; c < r; ++c) {
      Mat x(d, 1.0);
      double lambda = 0.0;
      for (int it = 0; it < 500; ++it) {
        Mat y = mul(g, x, d, d, 1);
        lambda = std::sqrt(dot(y, y));
        for (int64_t k = 0; k < d; ++k) x[k] = y[k] / lambda;
      }
      int64_t arg = 0;
      for (int64_t k = 1; k < d; ++k)
        if (std::abs(x[k]) > std::abs(x[arg])) arg = k;
      for (int64_t k = 0; k < d; ++k) ref_vecs[k * r + c] = x[arg] < 0 ? -x[k] : x[k];
      ref_vals.push_back(lambda);
      for (int64_t i = 0; i < d; ++i)
        for (int64_t j = 0; j < d; ++j) g[i * d + j] -= lambda * x[i] * x[j];
    }
    EXPECT_LT(rel_error(ev, ref_vals), 1e-5);
    EXPECT_LT(rel_error(u, ref_vecs), 1e-4);
  }
}

TEST(Subspace, RejectsBadSizes) {
  std::vector<float> buf(16);
  const Subspace bad{4, 5, buf.data(), buf.data(), buf.data()};  // r > d
  try {
    cpu::subspace_project(bad, 0.0f, 1, buf.data(), buf.data());
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "subspace_project.r");
  }
  EXPECT_THROW(cpu::principal_directions(2, 4, 0, buf.data(), false, buf.data()), InputError);
}

}  // namespace
}  // namespace lowband::kernels::test
