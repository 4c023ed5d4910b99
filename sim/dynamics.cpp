#include "sim/dynamics.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace lowband::sim {

namespace {

// SplitMix64: tiny, and the same numbers from every compiler and library (the
// standard distributions are not specified bit for bit).
uint64_t next_u64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1): never 0, so that log() is finite.
double uniform_open(uint64_t& state) { return (static_cast<double>(next_u64(state) >> 11) + 0.5) * 0x1p-53; }

double standard_normal(uint64_t& state) {  // Box-Muller, one of the pair
  const double u = uniform_open(state), v = uniform_open(state);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

double exponential(uint64_t& state, double mean) { return -mean * std::log(uniform_open(state)); }

}  // namespace

bool takes_anything_down(const std::vector<NetworkDynamic>& dynamics) {
  return std::any_of(dynamics.begin(), dynamics.end(),
                     [](const NetworkDynamic& d) { return d.quantity == DynamicQuantity::state; });
}

double typical_longest_outage_seconds(const TraceSpec& t) {
  if (t.kind == TraceSpec::Kind::outages) return t.mean_down_s;
  if (t.kind != TraceSpec::Kind::points) return 0;
  double longest = 0, down_since = -1;
  for (const TracePoint& p : t.points) {
    if (p.value == 0 && down_since < 0) down_since = p.seconds;
    if (p.value != 0 && down_since >= 0) {
      longest = std::max(longest, p.seconds - down_since);
      down_since = -1;
    }
  }
  return down_since >= 0 ? kNever : longest;
}

const Words<DynamicQuantity>& dynamic_quantity_words() {
  static const Words<DynamicQuantity> words = {{"bandwidth", DynamicQuantity::bandwidth},
                                               {"latency", DynamicQuantity::latency},
                                               {"state", DynamicQuantity::state},
                                               {"speed", DynamicQuantity::speed}};
  return words;
}

const char* to_string(DynamicQuantity quantity) { return word_of(dynamic_quantity_words(), quantity).c_str(); }

Trace::Trace(TraceSpec spec) : spec_(std::move(spec)) {
  rng_state_ = spec_.seed;
  if (spec_.kind == TraceSpec::Kind::points) {
    points_ = spec_.points;
    complete_ = true;
  }
}

void Trace::extend_past(double seconds) {
  while (!complete_ && (points_.empty() || points_.back().seconds <= seconds)) {
    switch (spec_.kind) {
      case TraceSpec::Kind::points:
        complete_ = true;
        break;
      case TraceSpec::Kind::daily: {
        const double t = points_.empty() ? 0.0 : points_.back().seconds + spec_.sample_s;
        const double phase = 2.0 * M_PI * (t - spec_.low_at_s) / spec_.period_s;
        points_.push_back({t, 1.0 - (1.0 - spec_.low) * 0.5 * (1.0 + std::cos(phase))});
        break;
      }
      case TraceSpec::Kind::random_walk:
        if (points_.empty()) {
          points_.push_back({0.0, 1.0});
        } else {
          walk_ = std::clamp(walk_ * std::exp(spec_.sigma * standard_normal(rng_state_)), spec_.min, spec_.max);
          points_.push_back({points_.back().seconds + spec_.every_s, walk_});
        }
        break;
      case TraceSpec::Kind::outages: {
        // Up from 0, then down for Exp(mean_down) after each Exp(mean_up): even
        // points are up, odd ones down.
        if (points_.empty()) {
          points_.push_back({0.0, 1.0});
          break;
        }
        const bool down_next = points_.size() % 2 == 1;
        const double length = exponential(rng_state_, down_next ? spec_.mean_up_s : spec_.mean_down_s);
        points_.push_back({points_.back().seconds + length, down_next ? spec_.value : 1.0});
        break;
      }
    }
  }
}

size_t Trace::index_at(double seconds) {
  extend_past(seconds);
  auto after = std::upper_bound(points_.begin(), points_.end(), seconds,
                                [](double s, const TracePoint& p) { return s < p.seconds; });
  if (after == points_.begin()) return static_cast<size_t>(-1);
  return static_cast<size_t>(after - points_.begin()) - 1;
}

double Trace::value_at(double seconds) {
  const size_t i = index_at(seconds);
  return i == static_cast<size_t>(-1) ? 1.0 : points_[i].value;
}

double Trace::next_change_after(double seconds) {
  const size_t i = index_at(seconds);
  const size_t next = i == static_cast<size_t>(-1) ? 0 : i + 1;
  return next < points_.size() ? points_[next].seconds : kNever;
}

}  // namespace lowband::sim
