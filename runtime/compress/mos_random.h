#pragma once
// Seeded randomness of the MoS codec: the generators A, random U₀ (warm_start
// false) and random θ (rotation random). Counter-based (splitmix64) so each draw
// depends only on the seed and what it is for, never on call order.
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace lowband::compress::mos {

// splitmix64's finaliser: a bijective 64-bit mix.
uint64_t mix64(uint64_t x);
// A stream key from a seed and up to a few small integers (purpose, layer, ...).
uint64_t stream_key(uint64_t seed, std::initializer_list<int64_t> parts);

class Rng {
 public:
  explicit Rng(uint64_t key) : state_(key) {}
  uint64_t next();
  double uniform();  // [0, 1), 53 bits
  double normal();   // N(0, 1), Box-Muller

 private:
  uint64_t state_;
};

// (d, r) row-major with orthonormal columns: Gaussian columns, Gram-Schmidt twice in double.
std::vector<float> random_orthonormal(int64_t d, int64_t r, uint64_t key);
// (d, d) row-major skew-symmetric A = (G − Gᵀ)/√(8d), G iid N(0, 1): ‖A‖₂ ≈ 1.
std::vector<float> random_skew_generator(int64_t d, uint64_t key);

}  // namespace lowband::compress::mos
