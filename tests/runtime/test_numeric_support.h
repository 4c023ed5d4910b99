#pragma once
// Comparisons the trainer tests share.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lowband::test_support {

// Norm-wise relative difference ||a - b|| / ||b||, summed in double.
inline double rel_diff(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

}  // namespace lowband::test_support
