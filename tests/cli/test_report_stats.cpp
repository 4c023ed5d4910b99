// runtime/report/stats.h against values computed by hand or with mpmath (30
// digits; the commands are in the comments): Student's t CDF and quantiles, the
// mean's interval, Welch's test; one value gives no interval.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/report/stats.h"

using namespace lowband::report;

namespace {

TEST(ReportStats, StudentTCdfMatchesClosedFormsAndMpmath) {
  // df = 1 (Cauchy): 1/2 + atan(t)/π; df = 2: 1/2 + t / (2√(2 + t²)).
  for (double t : {-7.0, -1.0, 0.0, 0.3, 2.0, 40.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / M_PI, 1e-13) << t;
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-13) << t;
  }
  // mpmath: 1 - betainc(df/2, 1/2, 0, df/(df+t²), regularized=True)/2
  EXPECT_NEAR(student_t_cdf(2, 3), 0.930337015720578, 1e-12);
  EXPECT_NEAR(student_t_cdf(-1.5, 2.5), 0.123918226543148, 1e-12);  // fractional df, as Welch's
}

TEST(ReportStats, StudentTQuantilesAreTheTablesOnes) {
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062047361747, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 3), 3.18244630528371, 1e-10);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.77644510519779, 1e-10);
  EXPECT_NEAR(student_t_quantile(0.025, 4), -2.77644510519779, 1e-10);
  EXPECT_NEAR(student_t_quantile(0.975, 1e6), 1.95996, 1e-4);  // the normal's
}

TEST(ReportStats, MeanIntervalByHandAndNoneForOneValue) {
  // {2.0, 2.2, 2.4, 2.6}: mean 2.3, s = √(0.2/3), half-width t_{0.975,3}·s/2.
  const MeanInterval m = mean_interval({2.0, 2.2, 2.4, 2.6});
  EXPECT_EQ(m.n, 4);
  EXPECT_NEAR(m.mean, 2.3, 1e-15);
  ASSERT_TRUE(m.sd && m.half_width);
  EXPECT_NEAR(*m.sd, std::sqrt(0.2 / 3), 1e-15);
  EXPECT_NEAR(*m.half_width, 3.18244630528371 * std::sqrt(0.2 / 3) / 2, 1e-10);
  EXPECT_NEAR(*mean_interval({2.0, 2.2, 2.4, 2.6}, 0.9).half_width, 2.35336343480182 * std::sqrt(0.2 / 3) / 2, 1e-9);

  const MeanInterval one = mean_interval({2.5});
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.mean, 2.5);
  EXPECT_FALSE(one.half_width.has_value());  // 1 seed: no interval, never an invented one
  EXPECT_FALSE(one.sd.has_value());
}

TEST(ReportStats, WelchTestByHand) {
  // a = {1,2,3}, b = {4,6,8,10}: difference -5, squared standard errors 1/3 and 5/3,
  // t = -5/√2, df = 2² / ((1/3)²/2 + (5/3)²/3) = 4.0754717; mpmath gives p and the
  // half-width t_{0.975,df}·√2.
  const auto w = welch_t_test({1, 2, 3}, {4, 6, 8, 10});
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(w->difference, -5);
  EXPECT_NEAR(w->t, -5 / std::sqrt(2.0), 1e-13);
  EXPECT_NEAR(w->df, 4.07547169811321, 1e-12);
  EXPECT_NEAR(w->p_value, 0.0233767676003037, 1e-10);
  EXPECT_NEAR(w->half_width, 3.89797545108313, 1e-9);
  // Symmetric in its sides, up to the difference's sign.
  const auto back = welch_t_test({4, 6, 8, 10}, {1, 2, 3});
  EXPECT_DOUBLE_EQ(back->difference, 5);
  EXPECT_NEAR(back->p_value, w->p_value, 1e-15);
}

TEST(ReportStats, WelchNeedsTwoValuesASideAndHandlesConstantSides) {
  EXPECT_FALSE(welch_t_test({1.0}, {1, 2, 3}).has_value());
  EXPECT_FALSE(welch_t_test({1, 2}, {}).has_value());
  EXPECT_DOUBLE_EQ(welch_t_test({2, 2}, {2, 2, 2})->p_value, 1);
  EXPECT_DOUBLE_EQ(welch_t_test({2, 2}, {3, 3})->p_value, 0);
  // Identical spreads around one mean: no difference at all.
  EXPECT_NEAR(welch_t_test({1, 2, 3}, {1, 2, 3})->p_value, 1, 1e-15);
}

}  // namespace
