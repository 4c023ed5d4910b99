#pragma once
// One logged compute span of a rank's program (context/attention.cpp,
// context/rank.cpp, pipeline/rank.cpp): its measured wall time (waiting for the
// device at both ends) is logged under `kind` when done(), or with profile
// timing the device profile's seconds for its cost (called only then: a measured
// run needs no finite profile).
#include <chrono>
#include <functional>

#include "comm/recording.h"
#include "kernels/backend.h"
#include "runtime/cost_model.h"

namespace lowband::parallel {

enum class ComputeTiming { measured, profile };

// Where a rank program's spans go: its device, its log and timing, the total its
// measured wall seconds add to, and the device profile's seconds of a cost on
// the rank's node.
struct SpanSink {
  const kernels::Backend& k;
  comm::RankLog& log;
  ComputeTiming timing;
  double& wall_total;
  std::function<double(const cost::Cost&, const char* kind)> profile_seconds;
};

class ComputeSpan {
 public:
  ComputeSpan(const SpanSink& sink, const char* kind, const cost::Cost& cost)
      : sink_(sink), kind_(kind), cost_(cost) {
    sink_.k.synchronize();
    t0_ = std::chrono::steady_clock::now();
  }
  void done() {
    sink_.k.synchronize();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    sink_.wall_total += wall;
    sink_.log.compute(sink_.timing == ComputeTiming::measured ? wall : sink_.profile_seconds(cost_, kind_), kind_);
  }

 private:
  const SpanSink& sink_;
  const char* kind_;
  cost::Cost cost_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace lowband::parallel
