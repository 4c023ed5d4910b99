#include "runtime/compress/error_sums.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace lowband::compress {

void ErrorSums::clear() {
  if (fixed_)
    std::fill(sums_.begin(), sums_.end(), 0.0);
  else
    sums_.clear();
}

void ErrorSums::add(int layer, KvTensor t, double err_sq, double norm_sq) {
  const size_t i = (size_t(layer) * 2 + size_t(t)) * 2;
  if (sums_.size() <= i) {
    if (fixed_ || layer < 0) throw std::out_of_range("ErrorSums::add: layer " + std::to_string(layer));
    sums_.resize(size_t(layer + 1) * 4, 0.0);
  }
  sums_[i] += err_sq;
  sums_[i + 1] += norm_sq;
}

void ErrorSums::add(const KvBlockId& id, int64_t count, const float* z, const float* z_hat) {
  double err_sq = 0, norm_sq = 0;
  for (int64_t j = 0; j < count; ++j) {
    const double e = double(z[j]) - double(z_hat[j]);
    err_sq += e * e;
    norm_sq += double(z[j]) * double(z[j]);
  }
  add(id.layer, id.tensor, err_sq, norm_sq);
}

std::vector<double> ErrorSums::relative(KvTensor t) const {
  if (!any()) return {};
  std::vector<double> out(sums_.size() / 4, 0.0);
  for (size_t l = 0; l < out.size(); ++l) {
    const size_t i = (l * 2 + size_t(t)) * 2;
    if (sums_[i + 1] > 0) out[l] = std::sqrt(sums_[i] / sums_[i + 1]);
  }
  return out;
}

bool ErrorSums::any() const {
  for (size_t i = 1; i < sums_.size(); i += 2)
    if (sums_[i] != 0) return true;
  return false;
}

}  // namespace lowband::compress
