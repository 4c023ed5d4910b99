#include "runtime/parallel/pipeline_rank.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/error.h"
#include "runtime/parallel/pipeline_schedule.h"

namespace lowband::parallel {

class PipelineRank::Span : public ComputeSpan {
 public:
  Span(PipelineRank& r, const char* kind, const cost::Cost& c)
      : ComputeSpan(r.k_, r.log_, r.timing_, r.kernel_wall_seconds_, kind,
                    [&r, kind, c] { return r.costs_.seconds(r.stage_, c, kind); }) {}
};

namespace {

int tag_act(int microbatch) { return 2 * microbatch; }
int tag_act_grad(int microbatch) { return 2 * microbatch + 1; }

bool subspace_boundaries(const Scenario& s) {
  return s.parallel.pipeline > 1 && s.compression.boundary.method == BoundaryMethod::subspace;
}

}  // namespace

model::ModelOptions stage_model_options(const Scenario& s, int stage, kernels::Device device,
                                        std::vector<float>& fixed) {
  const ParallelConfig& p = s.parallel;
  model::ModelOptions o;
  o.device = device;
  o.span = {p.stage_first_layer(stage, s.model.layers), p.stage_layer_count(stage, s.model.layers), stage == 0,
            stage == p.pipeline - 1};
  if (subspace_boundaries(s) && stage == 0) {
    fixed = compress::fixed_embedding(s.model.vocab, s.model.d_model, compress::boundary_seed(s));
    o.fixed_embedding = fixed.data();
  }
  return o;
}

BoundaryConstraint::BoundaryConstraint(const Scenario& s, const kernels::Backend& k) {
  if (!subspace_boundaries(s)) return;
  constrained_end_ = s.parallel.stage_first_layer(s.parallel.pipeline - 1, s.model.layers);
  basis_.emplace(k, s.model.d_model, s.compression.boundary.rank, compress::boundary_seed(s));
}

void BoundaryConstraint::project(model::Model& m, bool grads) {
  if (!basis_) return;
  float* base = grads ? m.grads() : m.params();
  const model::ParamLayout& L = m.layout();
  const ModelConfig& c = m.config();
  for (int l = L.first_layer(); l < L.end_layer() && l < constrained_end_; ++l) {
    basis_->project_columns(base + L.layer(l).wo, c.d_model);
    basis_->project_columns(base + L.layer(l).w_down, c.ffn_hidden);
  }
  if (L.span().embedding) basis_->project_rows(base + L.embedding(), c.vocab);
}

PipelineRank::PipelineRank(const Scenario& s, int stage, const kernels::Backend& k, ComputeTiming timing,
                           comm::RankLog& log)
    : scenario_(s), stage_(stage), P_(s.parallel.pipeline), M_(s.parallel.microbatches), k_(k), timing_(timing),
      log_(log), costs_(scenario_),
      model_(s.model, s.training.seed, stage_model_options(s, stage, k.device, fixed_embedding_)),
      optimizer_(model_.layout(), optim::optimizer_config_from(s.training), k.device),
      lr_(optim::lr_schedule_from(s.training)), codec_(compress::make_boundary_codec(s)), constraint_(s, k) {
  constraint_.project(model_, /*grads=*/false);  // start inside the constraint
  fixed_embedding_.clear();                       // the model holds its own copy
  fixed_embedding_.shrink_to_fit();
}

std::vector<PipelineRank::Microbatch> PipelineRank::split(const int32_t* inputs, const int32_t* targets,
                                                          int sequences) const {
  // M microbatches of sequences / M (the first sequences % M one more: an
  // evaluation batch need not divide; fewer when there are fewer sequences).
  const int M = std::min(M_, sequences);
  const int64_t T = scenario_.model.seq_len;
  std::vector<Microbatch> out;
  int first = 0;
  for (int m = 0; m < M; ++m) {
    const int n = sequences / M + (m < sequences % M ? 1 : 0);
    Microbatch mb{inputs + first * T, targets + first * T, n, n * T, 0};
    for (int64_t i = 0; i < mb.rows; ++i) mb.valid += mb.targets[i] >= 0 ? 1 : 0;
    out.push_back(mb);
    first += n;
  }
  return out;
}

template <class Fill>
void PipelineRank::write_from_host(float* device_ptr, size_t count, Fill fill) {
  if (k_.device == kernels::Device::cpu) return fill(device_ptr);
  host_.resize(count);
  fill(host_.data());
  k_.upload(device_ptr, host_.data(), count * sizeof(float));
}

double PipelineRank::forward(comm::Communicator& comm, int m, const Microbatch& mb, int slot) {
  const int64_t n = mb.rows, d = scenario_.model.d_model;
  compress::CodecMessage& boundary = boundary_[size_t(slot)];
  if (stage_ > 0) {
    std::vector<uint8_t> bytes;
    comm.recv_message(stage_ - 1, tag_act(m), bytes, comm::Wire("act", codec_->message_bytes(n)));
    compress::unpack(bytes.data(), bytes.size(), boundary);
    compress::check_layout(boundary.layout(), codec_->message_layout(n), "pipeline boundary message");
  }
  Span sp(*this, "stage_fwd", costs_.forward(stage_));
  model_.use_slot(slot);
  model_.begin({mb.inputs, mb.targets, nullptr, mb.sequences, scenario_.model.seq_len});
  if (stage_ > 0)
    write_from_host(model_.input_residual(), size_t(n * d), [&](float* x) { codec_->decode(n, boundary, x); });
  model_.forward_layers(attention_[size_t(slot)]);
  double loss_sum = 0;
  if (stage_ == P_ - 1 && mb.valid > 0) loss_sum = double(model_.head_forward()) * double(mb.valid);
  std::vector<uint8_t> packed;
  if (stage_ < P_ - 1) {
    codec_->encode(n, kernels::host_view(k_, model_.output_residual(), size_t(n * d), host_), mb.inputs, boundary);
    packed = compress::pack(boundary);
  }
  sp.done();
  if (stage_ < P_ - 1) comm.send(stage_ + 1, tag_act(m), packed.data(), packed.size(), comm::Wire("act", boundary.wire_bytes));
  return loss_sum;
}

void PipelineRank::backward(comm::Communicator& comm, int m, const Microbatch& mb, int slot, int64_t valid_total) {
  const int64_t n = mb.rows, d = scenario_.model.d_model;
  const compress::CodecMessage& boundary = boundary_[size_t(slot)];
  compress::CodecGradient grad;
  if (stage_ < P_ - 1) {
    std::vector<uint8_t> bytes(compress::packed_gradient_bytes(codec_->gradient_floats(n)));
    comm.recv(stage_ + 1, tag_act_grad(m), bytes.data(), bytes.size(), comm::Wire("act_grad", codec_->gradient_bytes(n)));
    compress::unpack(bytes.data(), bytes.size(), grad);
    compress::check_gradient(grad, codec_->gradient_floats(n), "pipeline boundary gradient");
  }
  Span sp(*this, "stage_bwd", costs_.backward(stage_));
  model_.use_slot(slot);
  if (stage_ == P_ - 1) {
    model_.head_backward(mb.valid > 0 ? float(double(mb.valid) / double(valid_total)) : 0.0f);
  } else {
    write_from_host(model_.residual_grad(), size_t(n * d),
                    [&](float* dx) { codec_->decode_gradient(n, grad, boundary, dx); });
  }
  model_.backward_layers(attention_[size_t(slot)]);
  model_.embedding_backward();
  std::vector<uint8_t> packed;
  compress::CodecGradient back;
  if (stage_ > 0) {
    codec_->encode_gradient(n, kernels::host_view(k_, model_.residual_grad(), size_t(n * d), host_), boundary, back);
    packed = compress::pack(back);
  }
  sp.done();
  if (stage_ > 0)
    comm.send(stage_ - 1, tag_act_grad(m), packed.data(), packed.size(), comm::Wire("act_grad", back.wire_bytes));
}

RankStepResult PipelineRank::train_step(comm::Communicator& comm, int step, const int32_t* inputs,
                                        const int32_t* targets, int sequences) {
  const std::vector<Microbatch> mbs = split(inputs, targets, sequences);
  const int M = int(mbs.size());
  // A microbatch's slot: the ones held at once are consecutive, at most in_flight.
  const int in_flight = pipeline_in_flight(scenario_.parallel.schedule, P_, stage_, M);
  while (attention_.size() < size_t(in_flight)) attention_.emplace_back(k_.device);
  if (boundary_.size() < size_t(in_flight)) boundary_.resize(size_t(in_flight));
  int64_t valid_total = 0;
  for (const Microbatch& mb : mbs) valid_total += mb.valid;

  model_.zero_grads();
  double sums[2] = {0, 0};  // the loss sum, then the squared gradient norm
  for (const PipelineOp& op : pipeline_schedule(scenario_.parallel.schedule, P_, stage_, M)) {
    const Microbatch& mb = mbs[size_t(op.microbatch)];
    const int slot = op.microbatch % in_flight;
    if (op.forward) sums[0] += forward(comm, op.microbatch, mb, slot);
    else backward(comm, op.microbatch, mb, slot, valid_total);
  }
  constraint_.project(model_, /*grads=*/true);
  sums[1] = optimizer_.squared_grad_norm(model_.grads());
  comm.all_reduce_sum(sums, 2, comm::Wire("loss"));

  RankStepResult res;
  res.loss = valid_total > 0 ? float(sums[0] / double(valid_total)) : 0.0f;
  res.lr = lr_.at(step + 1);
  Span sp(*this, "optimizer", costs_.optimizer(stage_));
  res.grad_norm = optimizer_.step_with_norm(model_.params(), model_.grads(), res.lr, std::sqrt(sums[1])).grad_norm;
  constraint_.project(model_, /*grads=*/false);
  sp.done();
  return res;
}

float PipelineRank::evaluate(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                             int sequences) {
  const std::vector<Microbatch> mbs = split(inputs, targets, sequences);
  if (attention_.empty()) attention_.emplace_back(k_.device);
  if (boundary_.empty()) boundary_.resize(1);
  double sums[2] = {0, 0};  // the loss sum, the valid targets
  for (size_t m = 0; m < mbs.size(); ++m) {
    sums[0] += forward(comm, int(m), mbs[m], 0);
    sums[1] += double(mbs[m].valid);
  }
  if (stage_ != P_ - 1) sums[1] = 0;  // counted once
  comm.all_reduce_sum(sums, 2, comm::Wire("loss"));
  return sums[1] > 0 ? float(sums[0] / sums[1]) : 0.0f;
}

}  // namespace lowband::parallel
