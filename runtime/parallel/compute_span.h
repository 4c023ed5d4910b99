#pragma once
// One logged compute span of a rank's program (context_rank.cpp, pipeline_rank.cpp):
// its measured wall time (waiting for the device at both ends) is logged under
// `kind` when done(), or with profile timing the device profile's seconds for
// its cost, which `profile_seconds` gives (ContextCosts / PipelineCosts::seconds,
// called only then: a measured run needs no finite profile).
#include <chrono>
#include <functional>
#include <utility>

#include "comm/recording.h"
#include "kernels/backend.h"

namespace lowband::parallel {

enum class ComputeTiming { measured, profile };

class ComputeSpan {
 public:
  ComputeSpan(const kernels::Backend& k, comm::RankLog& log, ComputeTiming timing, double& wall_total,
              const char* kind, std::function<double()> profile_seconds)
      : k_(k), log_(log), timing_(timing), wall_total_(wall_total), kind_(kind),
        profile_seconds_(std::move(profile_seconds)) {
    k_.synchronize();
    t0_ = std::chrono::steady_clock::now();
  }
  void done() {
    k_.synchronize();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    wall_total_ += wall;
    log_.compute(timing_ == ComputeTiming::measured ? wall : profile_seconds_(), kind_);
  }

 private:
  const kernels::Backend& k_;
  comm::RankLog& log_;
  ComputeTiming timing_;
  double& wall_total_;
  const char* kind_;
  std::function<double()> profile_seconds_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace lowband::parallel
