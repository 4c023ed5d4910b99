#pragma once
// splitmix64 (Steele, Lea, Flood 2014): the one generator the data streams draw
// from (batch.cpp's windows, recall.cpp's records), the same numbers on every
// platform.
#include <cstdint>

namespace lowband::data {

// A bijective mix, and a generator that adds a constant to its state before each mix.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct SplitMix64 {
  uint64_t state;
  uint64_t next() { return mix64(state += 0x9E3779B97F4A7C15ull); }
  // Uniform in [0, range), unbiased (Lemire 2019: multiply, reject the short tail).
  uint64_t below(uint64_t range) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * range;
    auto low = static_cast<uint64_t>(m);
    if (low < range) {
      const uint64_t threshold = (0 - range) % range;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * range;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
};

}  // namespace lowband::data
