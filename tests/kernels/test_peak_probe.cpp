// bench/peak.h, the "% of peak" yardstick of the CPU benchmarks: the flops it
// divides by time must be the flops its FMA chains execute (issue 10 changed the
// chain count per ISA; a count kept in two places would drift). Deterministic:
// speed itself is not asserted here.
#include <gtest/gtest.h>

#include "bench/peak.h"

namespace lowband::bench::detail {
namespace {

// With mul = add = 1 every lane of every chain gains exactly 1 per iteration,
// so the returned sum grows by the number of FMA lanes executed (all values are
// integers below 2^24: exact in fp32).
TEST(PeakProbe, FlopCountIsTwiceTheFmaLanesExecuted) {
  for (const int64_t iters : {1, 7, 1000}) {
    const double fma_lanes =
        double(fma_chain(iters, 0.0f, 1.0f, 1.0f)) - double(fma_chain(0, 0.0f, 1.0f, 1.0f));
    EXPECT_EQ(fma_lanes, double(kAccumulators) * kLanes * double(iters)) << iters;
    EXPECT_EQ(flops_per_chain(iters), 2.0 * fma_lanes) << iters;
  }
}

}  // namespace
}  // namespace lowband::bench::detail
