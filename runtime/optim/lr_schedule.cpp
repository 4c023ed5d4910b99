#include "runtime/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/error.h"

namespace lowband::optim {

void LrSchedule::validate() const {
  if (!std::isfinite(peak_lr) || peak_lr < 0)
    throw InputError("training.lr", "must be finite and >= 0, got " + std::to_string(peak_lr));
  if (warmup_steps < 0)
    throw InputError("training.lr_warmup_steps", "must be >= 0, got " + std::to_string(warmup_steps));
  if (total_steps < 1)
    throw InputError("training.steps", "must be >= 1, got " + std::to_string(total_steps));
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1))
    throw InputError("training.min_lr_ratio", "must be in [0, 1], got " + std::to_string(min_lr_ratio));
}

double LrSchedule::at(int64_t step) const {
  if (step < 1) throw InputError("lr schedule step", "must be >= 1, got " + std::to_string(step));
  if (step <= warmup_steps) return peak_lr * double(step) / double(warmup_steps);
  const double floor_lr = min_lr_ratio * peak_lr;
  const double span = double(std::max<int64_t>(1, total_steps - warmup_steps));
  const double p = std::min(1.0, double(step - warmup_steps) / span);
  const double kPi = 3.14159265358979323846;
  const double shape = decay == DecayShape::linear ? 1.0 - p : 0.5 * (1.0 + std::cos(kPi * p));
  return floor_lr + (peak_lr - floor_lr) * shape;
}

LrSchedule lr_schedule_from(const TrainingConfig& t) {
  LrSchedule s;
  s.peak_lr = t.lr;
  s.warmup_steps = t.lr_warmup_steps;
  s.total_steps = t.steps;
  s.validate();
  return s;
}

}  // namespace lowband::optim
