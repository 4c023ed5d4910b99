#pragma once
// Learning rate per optimiser step: linear warm-up from 0 to the peak, then a
// decay (linear by default, as in the MoS paper; cosine as an option) to a floor
// of min_lr_ratio · peak, reached at total_steps and held after it.
//   step s >= 1, W = warmup_steps, N = total_steps, floor = min_lr_ratio · peak
//   s <= W:  peak · s / W
//   s >  W:  p = min(1, (s - W) / max(1, N - W))
//            linear: floor + (peak - floor) · (1 - p)
//            cosine: floor + (peak - floor) · (1 + cos(π p)) / 2
#include <cstdint>

#include "runtime/scenario/scenario.h"

namespace lowband::optim {

enum class DecayShape { linear, cosine };

struct LrSchedule {
  double peak_lr = 3e-4;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.1;
  DecayShape decay = DecayShape::linear;

  // Throws InputError("training.<field>", ...) for a negative or non-finite
  // peak, negative warm-up, total_steps < 1 or a ratio outside [0, 1].
  void validate() const;
  // Throws InputError("lr schedule step", ...) for step < 1.
  double at(int64_t step) const;
};

// From the scenario's training block: peak lr, lr_warmup_steps, steps; linear decay
// to 0.1 · peak.
LrSchedule lr_schedule_from(const TrainingConfig& training);

}  // namespace lowband::optim
