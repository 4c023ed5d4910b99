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

AdamW::AdamW(const model::ParamLayout& layout, OptimizerConfig config, kernels::Device device)
    : config_(config), count_(layout.count()), k_(&kernels::backend(device)),
      m_(*k_, size_t(count_)), v_(*k_, size_t(count_)) {
  for (const auto& t : layout.tensors()) {
    if (!ranges_.empty() && ranges_.back().decays == t.decays() &&
        ranges_.back().offset + ranges_.back().count == t.offset)
      ranges_.back().count += t.count();
    else
      ranges_.push_back(Range{t.offset, t.count(), t.decays()});
  }
}

AdamW::AdamW(const AdamW& o)
    : config_(o.config_), count_(o.count_), steps_(o.steps_), ranges_(o.ranges_), k_(o.k_),
      m_(*k_, o.m_.size()), v_(*k_, o.v_.size()) {
  k_->copy(m_.data(), o.m_.data(), m_.size() * sizeof(float));
  k_->copy(v_.data(), o.v_.data(), v_.size() * sizeof(float));
}

AdamW& AdamW::operator=(const AdamW& o) {
  if (this != &o) *this = AdamW(o);
  return *this;
}

StepStats AdamW::step(float* params, float* grads, double lr) {
  StepStats s;
  s.step = ++steps_;
  s.lr = lr;
  s.grad_norm = config_.grad_clip > 0 ? k_->clip_grad_norm(grads, count_, config_.grad_clip)
                                      : k_->global_grad_norm(grads, count_);
  update(params, grads, lr);
  return s;
}

double AdamW::squared_grad_norm(const float* grads) const {
  const double norm = k_->global_grad_norm(grads, count_);
  return norm * norm;
}

StepStats AdamW::step_with_norm(float* params, float* grads, double lr, double global_grad_norm) {
  StepStats s;
  s.step = ++steps_;
  s.lr = lr;
  s.grad_norm = global_grad_norm;
  if (config_.grad_clip > 0 && global_grad_norm > config_.grad_clip)  // as clip_grad_norm scales
    k_->scale_inplace(grads, float(config_.grad_clip / global_grad_norm), count_);
  update(params, grads, lr);
  return s;
}

void AdamW::update(float* params, float* grads, double lr) {
  kernels::AdamWConfig k;
  k.lr = float(lr);
  k.beta1 = config_.beta1;
  k.beta2 = config_.beta2;
  k.eps = config_.eps;
  for (const Range& r : ranges_) {
    k.weight_decay = r.decays ? config_.weight_decay : 0.0f;
    k_->adamw_step(params + r.offset, grads + r.offset, m_.data() + r.offset,
                             v_.data() + r.offset, r.count, steps_, k);
  }
}

void AdamW::save_state(std::ostream& out) const {
  binary::write_i64(out, steps_);
  const std::vector<float> m = m_.to_host(), v = v_.to_host();
  binary::write_array(out, m.data(), m.size());  // the same bytes as write_vector
  binary::write_array(out, v.data(), v.size());
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
  m_.upload(m.data(), m.size());
  v_.upload(v.data(), v.size());
}

bool AdamW::same_state(const AdamW& other) const {
  auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  return steps_ == other.steps_ && same_bits(m_.to_host(), other.m_.to_host()) &&
         same_bits(v_.to_host(), other.v_.to_host());
}

}  // namespace lowband::optim
