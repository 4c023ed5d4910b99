#include "runtime/optim/optimizer.h"

#include <cmath>
#include <cstring>
#include <istream>
#include <ostream>
#include <string>

#include "common/binary_io.h"
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

void AdamW::save_state(std::ostream& out) const {
  binary::write_i64(out, steps_);
  binary::write_array(out, m_.data(), m_.size());  // the same bytes as write_vector
  binary::write_array(out, v_.data(), v_.size());
}

void AdamW::load_state(std::istream& in) {
  const int64_t steps = binary::read_i64(in, "the optimiser's step count");
  if (steps < 0) throw binary::BinaryFormatError("negative optimiser step count");
  std::vector<float> m = binary::read_vector<float>(in, "the optimiser's first moments");
  std::vector<float> v = binary::read_vector<float>(in, "the optimiser's second moments");
  if (m.size() != m_.size() || v.size() != v_.size())
    throw binary::BinaryFormatError("optimiser moments of " + std::to_string(m.size()) + " values, expected " +
                                    std::to_string(m_.size()));
  steps_ = steps;
  m_.assign(m.begin(), m.end());
  v_.assign(v.begin(), v.end());
}

bool AdamW::same_state(const AdamW& other) const {
  return steps_ == other.steps_ && m_.size() == other.m_.size() && v_.size() == other.v_.size() &&
         std::memcmp(m_.data(), other.m_.data(), m_.size() * sizeof(float)) == 0 &&
         std::memcmp(v_.data(), other.v_.data(), v_.size() * sizeof(float)) == 0;
}

}  // namespace lowband::optim
