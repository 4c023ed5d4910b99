#pragma once
// The statistics `lowband report` and `plot` put beside runs that differ only by
// seed: a mean with its Student-t interval, and Welch's t-test between two sets of
// seeds. Seeds are few (3-10), so intervals use Student's t, not the normal
// quantile: with 3 seeds the 95 % half-width is 4.30 standard errors, not 1.96.
#include <cstddef>
#include <optional>
#include <vector>

namespace lowband::report {

// P(T <= t) for Student's t with `df` > 0 degrees of freedom (df need not be an
// integer: Welch's test gives fractional ones). From the regularized incomplete
// beta function, evaluated by its continued fraction.
double student_t_cdf(double t, double df);

// The t with student_t_cdf(t, df) = p, 0 < p < 1 (bisection on the CDF to 1e-12).
double student_t_quantile(double p, double df);

// Mean of `values` and, with two or more, the half-width of its two-sided
// `level` interval: t_{(1+level)/2, n-1} · s / √n (s the sample standard
// deviation). One value: no interval (half_width nullopt), never an invented one.
struct MeanInterval {
  int n = 0;
  double mean = 0;
  std::optional<double> sd, half_width;
};
MeanInterval mean_interval(const std::vector<double>& values, double level = 0.95);

// Welch's two-sample t-test of mean(a) - mean(b), unequal variances. nullopt when
// either side has fewer than two values. Both sides constant and equal: p = 1;
// constant and different: p = 0 (the difference is exact).
struct WelchTest {
  double difference = 0;   // mean(a) - mean(b)
  double half_width = 0;   // of its two-sided `level` interval, Welch-Satterthwaite df
  double t = 0, df = 0, p_value = 1;  // two-sided
};
std::optional<WelchTest> welch_t_test(const std::vector<double>& a, const std::vector<double>& b, double level = 0.95);

// An arm's values: get(rows[i]) for i in `which` (one run per seed), those present,
// in order; and their mean and interval when every run has one (else nullopt).
template <class Row, class Get>
std::vector<double> values_of(const std::vector<Row>& rows, const std::vector<size_t>& which, Get get) {
  std::vector<double> out;
  for (size_t i : which)
    if (const std::optional<double> x = get(rows[i])) out.push_back(*x);
  return out;
}
template <class Row, class Get>
std::optional<MeanInterval> arm_value(const std::vector<Row>& rows, const std::vector<size_t>& which, Get get) {
  const std::vector<double> v = values_of(rows, which, get);
  if (v.empty() || v.size() < which.size()) return std::nullopt;
  return mean_interval(v);
}

}  // namespace lowband::report
