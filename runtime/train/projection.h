#pragma once
// Projected timing (Scenario::projection): a small run stands in for a large one.
// The loss curve is the small run's; each step's simulated seconds are those
// `estimate` gives for the projected scenario — its model, sequence, devices and
// network. Steps the small run's codec did not compress (MoS warm-up) take the
// projected scenario's uncompressed step time, the others its compressed one, so
// the curve's shape in time follows the run's own phases.
#include <nlohmann/json.hpp>

#include "runtime/estimate/estimate.h"
#include "runtime/scenario/scenario.h"
#include "sim/replay.h"

namespace lowband::train {

class StepTimeProjection {
 public:
  // Runs `estimate` on the projected scenario as given and with compression off.
  explicit StepTimeProjection(const Scenario& projected);

  // The step's figures at the projected scale, in place of the small run's replay.
  sim::ReplayResult step(bool compressed) const;
  double tokens_per_step() const { return compressed_.tokens_per_step; }
  // For summary.json: the projected scenario, both step times, and what they mean.
  nlohmann::json describe() const;

 private:
  std::string name_, description_;
  Estimate compressed_, uncompressed_;
};

}  // namespace lowband::train
