#include "runtime/optim/optimizer.h"

#include <cmath>
#include <string>

#include "common/error.h"

namespace lowband::optim {

OptimizerConfig optimizer_config_from(const TrainingConfig& t) {
  if (!(t.weight_decay >= 0))
    throw InputError("training.weight_decay", "must be >= 0, got " + std::to_string(t.weight_decay));
  if (!(t.grad_clip >= 0))
    throw InputError("training.grad_clip", "must be >= 0 (0: off), got " + std::to_string(t.grad_clip));
  OptimizerConfig c;
  c.weight_decay = float(t.weight_decay);
  c.grad_clip = t.grad_clip;
  return c;
}

AdamW::AdamW(const model::ParamLayout& layout, OptimizerConfig config)
    : config_(config), count_(layout.count()), m_(size_t(count_), 0.0f), v_(size_t(count_), 0.0f) {
  for (const auto& t : layout.tensors()) {
    if (!ranges_.empty() && ranges_.back().decays == t.decays() &&
        ranges_.back().offset + ranges_.back().count == t.offset)
      ranges_.back().count += t.count();
    else
      ranges_.push_back(Range{t.offset, t.count(), t.decays()});
  }
}

StepStats AdamW::step(float* params, float* grads, double lr) {
  StepStats s;
  s.step = ++steps_;
  s.lr = lr;
  s.grad_norm = config_.grad_clip > 0 ? kernels::cpu::clip_grad_norm(grads, count_, config_.grad_clip)
                                      : kernels::cpu::global_grad_norm(grads, count_);
  kernels::AdamWConfig k;
  k.lr = float(lr);
  k.beta1 = config_.beta1;
  k.beta2 = config_.beta2;
  k.eps = config_.eps;
  for (const Range& r : ranges_) {
    k.weight_decay = r.decays ? config_.weight_decay : 0.0f;
    kernels::cpu::adamw_step(params + r.offset, grads + r.offset, m_.data() + r.offset,
                             v_.data() + r.offset, r.count, steps_, k);
  }
  return s;
}

}  // namespace lowband::optim
