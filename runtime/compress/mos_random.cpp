#include "runtime/compress/mos_random.h"

#include <cmath>

namespace lowband::compress::mos {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t stream_key(uint64_t seed, std::initializer_list<int64_t> parts) {
  uint64_t h = mix64(seed ^ 0x6d6f732d636f6465ULL);  // "mos-code": apart from other users of the seed
  for (int64_t p : parts) h = mix64(h ^ static_cast<uint64_t>(p));
  return h;
}

uint64_t Rng::next() {
  state_ += 0x9e3779b97f4a7c15ULL;
  return mix64(state_);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::vector<float> random_orthonormal(int64_t d, int64_t r, uint64_t key) {
  Rng rng(key);
  std::vector<double> q(d * r);
  for (auto& x : q) x = rng.normal();
  for (int64_t j = 0; j < r; ++j) {
    for (int pass = 0; pass < 2; ++pass) {  // twice is enough for orthogonality to rounding
      for (int64_t i = 0; i < j; ++i) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += q[e * r + i] * q[e * r + j];
        for (int64_t e = 0; e < d; ++e) q[e * r + j] -= dot * q[e * r + i];
      }
      double norm = 0;
      for (int64_t e = 0; e < d; ++e) norm += q[e * r + j] * q[e * r + j];
      norm = std::sqrt(norm);
      for (int64_t e = 0; e < d; ++e) q[e * r + j] /= norm;
    }
  }
  return std::vector<float>(q.begin(), q.end());
}

std::vector<float> random_skew_generator(int64_t d, uint64_t key) {
  Rng rng(key);
  std::vector<float> a(d * d, 0.0f);
  const double scale = 1.0 / std::sqrt(8.0 * static_cast<double>(d));
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = i + 1; j < d; ++j) {
      // G_ij − G_ji of two iid normals is N(0, 2): draw it as √2·N(0, 1).
      const float x = static_cast<float>(std::sqrt(2.0) * rng.normal() * scale);
      a[i * d + j] = x;
      a[j * d + i] = -x;
    }
  return a;
}

}  // namespace lowband::compress::mos
