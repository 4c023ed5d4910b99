// The shared helpers every communicator uses: element sizes, even counts, and
// the one reduction (ring order, bit for bit).
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "comm/bench.h"
#include "comm/communicator.h"

namespace lowband::comm {
namespace {

TEST(CommHelpers, DtypeBytes) {
  EXPECT_EQ(dtype_bytes(DType::f32), 4u);
  EXPECT_EQ(dtype_bytes(DType::f64), 8u);
  EXPECT_EQ(dtype_bytes(DType::i64), 8u);
  EXPECT_EQ(dtype_bytes(DType::u8), 1u);
}

TEST(CommHelpers, EvenCountsGiveTheRemainderToTheFirstRanks) {
  EXPECT_EQ(even_counts(10, 4), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(even_counts(8, 4), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(even_counts(2, 3), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(even_counts(0, 2), (std::vector<int64_t>{0, 0}));
  EXPECT_THROW(even_counts(5, 0), std::logic_error);
  EXPECT_THROW(even_counts(-1, 2), std::logic_error);
}

TEST(CommHelpers, SumInOrderIsLeftToRightInFloat) {
  // Order matters here: (1e8 + 1) - 1e8 is 0 in float, 1e8 - 1e8 + 1 is 1.
  const std::vector<float> a = {1e8f, 1.0f, 3.0f}, b = {1.0f, 1e8f, 0.5f}, c = {-1e8f, -1e8f, 0.25f};
  std::vector<float> out(3);
  sum_in_order({a.data(), b.data(), c.data()}, out.data(), 3, DType::f32);
  for (size_t i = 0; i < 3; ++i) {
    const float expected = (a[i] + b[i]) + c[i];
    EXPECT_EQ(std::memcmp(&out[i], &expected, sizeof(float)), 0) << i;
  }
  EXPECT_EQ(out[0], 0.0f);  // not 1: the sum is not reordered
  EXPECT_EQ(out[1], 0.0f);
}

TEST(CommHelpers, SumInOrderMayWriteOverAnInput) {
  std::vector<double> a(3000), b(3000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.1 * static_cast<double>(i), b[i] = 1.0 / (1.0 + i);
  std::vector<double> expected(a.size());
  for (size_t i = 0; i < a.size(); ++i) expected[i] = a[i] + b[i];
  sum_in_order({a.data(), b.data()}, b.data(), static_cast<int64_t>(b.size()), DType::f64);
  EXPECT_EQ(b, expected);
}

TEST(CommHelpers, SumInOrderOfInt64AndNotOfBytes) {
  const std::vector<int64_t> a = {1, -5, int64_t(1) << 40}, b = {2, 5, 1};
  std::vector<int64_t> out(3);
  sum_in_order({a.data(), b.data()}, out.data(), 3, DType::i64);
  EXPECT_EQ(out, (std::vector<int64_t>{3, 0, (int64_t(1) << 40) + 1}));
  const std::vector<uint8_t> bytes = {1, 2};
  std::vector<uint8_t> sum(2);
  EXPECT_THROW(sum_in_order({bytes.data()}, sum.data(), 2, DType::u8), std::logic_error);
}

TEST(CommHelpers, RingSumOrderStartsAfterTheSegmentsOwner) {
  EXPECT_EQ(ring_sum_order(0, 4), (std::vector<int>{1, 2, 3, 0}));
  EXPECT_EQ(ring_sum_order(2, 4), (std::vector<int>{3, 0, 1, 2}));
  EXPECT_EQ(ring_sum_order(3, 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ring_sum_order(0, 1), (std::vector<int>{0}));
  EXPECT_THROW(ring_sum_order(4, 4), std::logic_error);
  EXPECT_THROW(ring_sum_order(0, 0), std::logic_error);
}

// Segment s of {3, 0, 2} over 3 ranks is x[s+1] + x[s+2] + x[s], left to right,
// in float64 with terms whose sum depends on the order.
TEST(CommHelpers, SumInRingOrderSumsEachSegmentFromTheNextRank) {
  const std::vector<double> x0 = {1e16, 1, 2, -1e16, 5}, x1 = {1, 1e16, 1e16, 1, -1e16}, x2 = {-1e16, -1e16, 3, 1e16, 1e16};
  const std::vector<int64_t> counts = {3, 0, 2};
  std::vector<double> out(5);
  sum_in_ring_order({x0.data(), x1.data(), x2.data()}, out.data(), counts, DType::f64);
  std::vector<double> expected(5);
  for (size_t i = 0; i < 3; ++i) expected[i] = (x1[i] + x2[i]) + x0[i];  // segment 0: ranks 1, 2, 0
  for (size_t i = 3; i < 5; ++i) expected[i] = (x0[i] + x1[i]) + x2[i];  // segment 2: ranks 0, 1, 2
  EXPECT_EQ(std::memcmp(out.data(), expected.data(), out.size() * sizeof(double)), 0);
  EXPECT_EQ(out[1], 1.0);  // (1e16 - 1e16) + 1; in rank order (1 + 1e16) - 1e16 = 0
  EXPECT_EQ(out[4], 4.0);  // the last segment is in rank order: (5 - 1e16) + 1e16
  EXPECT_THROW(sum_in_ring_order({x0.data(), x1.data()}, out.data(), counts, DType::f64), std::logic_error);
}

TEST(CommHelpers, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_reduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::all_gather, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::reduce_scatter, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(Collective::broadcast, 8), 1.0);
}

}  // namespace
}  // namespace lowband::comm
