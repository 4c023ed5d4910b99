#include "runtime/parallel/context/kv_agreement.h"

#include <algorithm>
#include <cmath>

namespace lowband::parallel {
namespace {

std::vector<float> to_host(const kernels::Backend& b, const float* data, size_t count) {
  std::vector<float> out(count);
  b.download(out.data(), data, count * sizeof(float));
  return out;
}

}  // namespace

void owner_receiver_errors(const std::vector<const ContextAttention*>& group, int layers, int64_t row_floats,
                           const kernels::Backend& b, std::vector<double>& k, std::vector<double>& v) {
  k.clear(), v.clear();
  const int P = int(group.size());
  if (P < 2 || group[0]->attended_kv(0, compress::KvTensor::k, 0) == nullptr) return;
  for (compress::KvTensor t : {compress::KvTensor::k, compress::KvTensor::v}) {
    std::vector<double>& out = t == compress::KvTensor::k ? k : v;
    out.assign(size_t(layers), 0.0);
    for (int l = 0; l < layers; ++l)
      for (int o = 0; o < P; ++o) {
        const size_t count = size_t(group[size_t(o)]->rows(o) * row_floats);
        const std::vector<float> own = to_host(b, group[size_t(o)]->attended_kv(l, t, o), count);
        for (int r = 0; r < P; ++r) {
          if (r == o) continue;
          const std::vector<float> theirs = to_host(b, group[size_t(r)]->attended_kv(l, t, o), count);
          double diff = 0, norm = 0;
          for (size_t i = 0; i < count; ++i) {
            const double d = double(own[i]) - theirs[i];
            diff += d * d, norm += double(theirs[i]) * theirs[i];
          }
          const double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
          out[size_t(l)] = std::max(out[size_t(l)], rel);
        }
      }
  }
}

}  // namespace lowband::parallel
