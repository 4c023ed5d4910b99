#include "runtime/report/stats.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace lowband::report {
namespace {

// The continued fraction of the incomplete beta function (modified Lentz's
// method); converges fast for x < (a+1)/(a+b+2), the caller swaps otherwise.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, eps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  auto step = [&](double term) {  // one convergent further; returns its factor
    d = 1 + term * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + term / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    return d * c;
  };
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    step(m * (b - m) * x / ((a - 1 + m2) * (a + m2)));                              // even term
    if (std::fabs(step(-(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2))) - 1) < eps) return h;  // odd
  }
  return h;  // 1000 terms: far past what any df a report sees needs
}

// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double sample_variance(const std::vector<double>& v, double mean) {
  double sum = 0;
  for (double x : v) sum += (x - mean) * (x - mean);
  return sum / double(v.size() - 1);
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / double(v.size());
}

}  // namespace

double student_t_cdf(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("student_t_cdf: degrees of freedom must be positive");
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));  // P(T > |t|)
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("student_t_quantile: p must be in (0, 1)");
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p) hi *= 2;
  while (hi - lo > 1e-12 * std::max(1.0, hi)) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

MeanInterval mean_interval(const std::vector<double>& values, double level) {
  MeanInterval m;
  m.n = int(values.size());
  if (values.empty()) return m;
  m.mean = mean_of(values);
  if (values.size() < 2) return m;
  m.sd = std::sqrt(sample_variance(values, m.mean));
  m.half_width = student_t_quantile((1 + level) / 2, m.n - 1) * *m.sd / std::sqrt(double(m.n));
  return m;
}

std::optional<WelchTest> welch_t_test(const std::vector<double>& a, const std::vector<double>& b, double level) {
  if (a.size() < 2 || b.size() < 2) return std::nullopt;
  const double na = double(a.size()), nb = double(b.size());
  const double ma = mean_of(a), mb = mean_of(b);
  const double va = sample_variance(a, ma) / na, vb = sample_variance(b, mb) / nb;  // squared standard errors
  WelchTest w;
  w.difference = ma - mb;
  const double se2 = va + vb;
  if (se2 == 0) {  // both constant: the difference is exact
    w.df = na + nb - 2;
    w.t = w.difference == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), w.difference);
    w.p_value = w.difference == 0 ? 1 : 0;
    return w;
  }
  w.df = se2 * se2 / (va * va / (na - 1) + vb * vb / (nb - 1));
  w.t = w.difference / std::sqrt(se2);
  w.p_value = 2 * student_t_cdf(-std::fabs(w.t), w.df);
  w.half_width = student_t_quantile((1 + level) / 2, w.df) * std::sqrt(se2);
  return w;
}

}  // namespace lowband::report
