#pragma once
// AdamW over a model's flat parameter buffer (kernels/adamw.h), with global
// gradient-norm clipping and decoupled weight decay on matrices only.
//
// Weight decay: every 2-D tensor decays (embedding, attention and MLP
// projections, lm_head), the RMSNorm gains do not (TensorInfo::decays(); the
// nanoGPT / Llama rule "dim >= 2"). Decay is decoupled: p <- p - lr·wd·p, as in
// torch.optim.AdamW. The moments m and v are two more flat buffers in the same
// layout as the parameters, in the backend's memory (kernels/backend.h: the
// CPU's, 64-byte aligned, or a GPU's); params and grads given to step() must be
// in that memory too.
// Gradients are clipped to a global L2 norm of grad_clip before the update
// (0 turns clipping off).
#include <cstdint>
#include <iosfwd>
#include <utility>
#include <vector>

#include "kernels/adamw.h"
#include "kernels/backend_buffer.h"
#include "runtime/model/param_layout.h"
#include "runtime/scenario/scenario.h"

namespace lowband::optim {

struct OptimizerConfig {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  double grad_clip = 1.0;  // max global gradient norm; 0: no clipping
};

// From the scenario's training block (weight_decay, grad_clip); betas and eps
// keep the Llama defaults above. Throws InputError("training.<field>") for a
// negative value.
OptimizerConfig optimizer_config_from(const TrainingConfig& training);

struct StepStats {
  int64_t step = 0;        // the step just taken (1 for the first)
  double lr = 0;
  double grad_norm = 0;    // global L2 norm before clipping
};

class AdamW {
 public:
  AdamW(const model::ParamLayout& layout, OptimizerConfig config,
        kernels::Device device = kernels::Device::cpu);
  AdamW(const AdamW& other);  // copies the moments (on the same device)
  AdamW& operator=(const AdamW& other);
  AdamW(AdamW&&) noexcept = default;
  AdamW& operator=(AdamW&&) noexcept = default;

  // Clips grads in place, then updates params (layout.count() floats each) at
  // learning rate lr. A non-finite gradient norm is returned, not thrown: the
  // caller decides (the trainer stops on a non-finite loss).
  StepStats step(float* params, float* grads, double lr);
  // The same for a shard of a model (a pipeline stage's parameters): clipped by
  // the norm of the WHOLE model's gradient, which the caller has summed over the
  // shards (global_grad_norm below is this shard's part).
  StepStats step_with_norm(float* params, float* grads, double lr, double global_grad_norm);
  double squared_grad_norm(const float* grads) const;

  int64_t steps_taken() const { return steps_; }
  const OptimizerConfig& config() const { return config_; }
  float* m() { return m_.data(); }
  float* v() { return v_.data(); }

  // The step count and both moments, for checkpoints (runtime/train/checkpoint.h).
  // load_state throws binary::BinaryFormatError (common/binary_io.h) for a state
  // of another size, leaving this optimiser as it was.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);
  // Whether two optimisers hold the same steps and moments, bit for bit.
  bool same_state(const AdamW& other) const;

 private:
  struct Range {
    int64_t offset, count;
    bool decays;
  };
  OptimizerConfig config_;
  int64_t count_ = 0;
  int64_t steps_ = 0;
  void update(float* params, float* grads, double lr);
  std::vector<Range> ranges_;  // adjacent tensors with the same decay merged
  const kernels::Backend* k_;
  kernels::BackendBuffer<float> m_, v_;
};

}  // namespace lowband::optim
