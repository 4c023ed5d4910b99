#pragma once
// Shared helpers for kernel tests: fresh random inputs (seed printed, override
// with LOWBAND_TEST_SEED), NaN poisoning, relative error against a float64
// reference, and central finite differences for gradient checks.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace lowband::kernels::test {

// A fresh seed per call, unless LOWBAND_TEST_SEED fixes it (to replay a failure).
// Tests print it with SCOPED_TRACE(seed_note(seed)).
inline uint64_t fresh_seed() {
  if (const char* env = std::getenv("LOWBAND_TEST_SEED")) return std::strtoull(env, nullptr, 10);
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}
inline std::string seed_note(uint64_t seed) {
  return "seed " + std::to_string(seed) + " (replay with LOWBAND_TEST_SEED=" +
         std::to_string(seed) + ")";
}

using Rng = std::mt19937_64;

inline std::vector<float> random_floats(Rng& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Integers uniform in [lo, hi] (inclusive).
inline std::vector<int32_t> random_ints(Rng& rng, size_t n, int32_t lo, int32_t hi) {
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Fill with quiet NaN so an output element the kernel forgets to write fails
// every comparison.
template <typename T>
inline void poison(std::vector<T>& v) {
  for (auto& x : v) x = std::numeric_limits<T>::quiet_NaN();
}

template <typename T>
inline std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// ||out - ref|| / ||ref|| (2-norms, in double). Infinity when any element of out
// is not finite, so poisoned (unwritten) elements cannot pass. When ref is all
// zero the absolute error ||out|| is returned instead.
template <typename T, typename U>
inline double rel_error(const T* out, const U* ref, size_t n) {
  double diff2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double o = double(out[i]), r = double(ref[i]);
    if (!std::isfinite(o)) return std::numeric_limits<double>::infinity();
    diff2 += (o - r) * (o - r);
    ref2 += r * r;
  }
  return ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
}
template <typename T, typename U>
inline double rel_error(const std::vector<T>& out, const std::vector<U>& ref) {
  if (out.size() != ref.size()) return std::numeric_limits<double>::infinity();
  return rel_error(out.data(), ref.data(), out.size());
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central finite differences of a scalar function f at x (float64):
// g[i] = (f(x + h e_i) - f(x - h e_i)) / 2h. Error O(h^2 f'''), so with h = 1e-4
// on smooth O(1) functions the result is good to about 1e-8 relative.
inline std::vector<double> numeric_gradient(const std::function<double(const std::vector<double>&)>& f,
                                            std::vector<double> x, double h = 1e-4) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    x[i] = xi + h;
    const double fp = f(x);
    x[i] = xi - h;
    const double fm = f(x);
    x[i] = xi;
    g[i] = (fp - fm) / (2.0 * h);
  }
  return g;
}

}  // namespace lowband::kernels::test
