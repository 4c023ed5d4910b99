#include "runtime/parallel/pipeline/rank.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/binary_io.h"
#include "common/error.h"
#include "runtime/compress/dry_codec.h"
#include "runtime/parallel/pipeline/schedule.h"

namespace lowband::parallel {

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
  if (subspace_boundaries(s) && stage == 0 && device != kernels::Device::dry) {  // a dry model holds no table
    fixed = compress::fixed_embedding(s.model.vocab, s.model.d_model, compress::boundary_seed(s));
    o.fixed_embedding = fixed.data();
  }
  return o;
}

BoundaryConstraint::BoundaryConstraint(const Scenario& s, const kernels::Backend& k) {
  if (!subspace_boundaries(s) || k.device == kernels::Device::dry) return;  // dry: nothing to keep in span(U)
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

PipelineRank::PipelineRank(const Scenario& s, int stage, int context_rank, const kernels::Backend& k,
                           ComputeTiming timing, comm::RankLog& log)
    : scenario_(s), stage_(stage), c_(context_rank), stages_(s.parallel.pipeline),
      context_ranks_(s.parallel.context), M_(s.parallel.microbatches), k_(k), costs_(scenario_),
      spans_{k, log, timing, kernel_wall_seconds_,
             [this](const cost::Cost& c, const char* kind) {
               return costs_.rank_seconds(stage_ * context_ranks_ + c_, c, kind);
             }},
      model_(s.model, s.training.seed, stage_model_options(s, stage, k.device, fixed_embedding_)),
      optimizer_(model_.layout(), optim::optimizer_config_from(s.training), k.device),
      lr_(optim::lr_schedule_from(s.training)), codec_(compress::make_boundary_codec_on(s, k.device)), constraint_(s, k),
      sync_(scenario_, k) {
  constraint_.project(model_, /*grads=*/false);  // start inside the constraint
  fixed_embedding_.clear();                       // the model holds its own copy
  fixed_embedding_.shrink_to_fit();
  if (context_ranks_ > 1)
    context_ = std::make_unique<ContextAttention>(scenario_, c_, compress::make_kv_codec_on(scenario_, k.device), model_,
                                                  costs_.context(), spans_);
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
    Microbatch mb{inputs + first * T, targets + first * T, n, first, 0};
    for (int64_t i = 0; i < n * T; ++i) mb.valid += mb.targets[i] >= 0 ? 1 : 0;
    out.push_back(mb);
    first += n;
  }
  return out;
}

int64_t PipelineRank::rows_of(const Microbatch& mb) const {
  return mb.sequences * (context_ ? context_->tokens_per_sequence(c_) : scenario_.model.seq_len);
}

template <class Fill>
void PipelineRank::write_from_host(float* device_ptr, size_t count, Fill fill) {
  if (kernels::host_addressable(k_)) return fill(device_ptr);  // (dry: fill is a dry codec's, writing nothing)
  host_.resize(count);
  fill(host_.data());
  k_.upload(device_ptr, host_.data(), count * sizeof(float));
}

template <class F>
auto PipelineRank::with_groups(comm::Communicator& world, F f) {
  if (context_ranks_ == 1) return f(Groups{world, world, nullptr});
  // Split in rank order: the pipeline of context rank c_ ranks its stages in
  // order, the context group of stage_ its context ranks. The replica's rank w
  // is stage w / C, context rank w % C (layout.h): every rank knows every color.
  std::vector<int> by_context, by_stage;
  for (int w = 0; w < world.size(); ++w) by_context.push_back(w % context_ranks_), by_stage.push_back(w / context_ranks_);
  const std::unique_ptr<comm::Communicator> pipeline = world.split_known(by_context);
  const std::unique_ptr<comm::Communicator> context = world.split_known(by_stage);
  return f(Groups{world, *pipeline, context.get()});
}

void PipelineRank::begin_microbatch(int m, const Microbatch& mb, int slot, const compress::CodecMessage* received) {
  model_.use_slot(slot);
  model::TokenBatch batch{mb.inputs, mb.targets, nullptr, mb.sequences, scenario_.model.seq_len};
  if (context_) {
    context_->use_slot(slot);
    batch = context_->gather(mb.inputs, mb.targets, mb.sequences, mb.first_sequence);
  }
  model_.begin(batch);
  tokens_ = batch.inputs;
  const int64_t n = batch.sequences * batch.tokens;
  local_valid_[size_t(m)] = context_ ? context_->valid() : mb.valid;
  if (received)
    write_from_host(model_.input_residual(), size_t(n * scenario_.model.d_model),
                    [&](float* x) { codec_->decode(n, *received, x); });
}

double PipelineRank::end_microbatch(int m, int64_t n, compress::CodecMessage& boundary, std::vector<uint8_t>& packed) {
  if (stage_ == stages_ - 1) {
    const int64_t valid = local_valid_[size_t(m)];
    return valid > 0 ? double(model_.head_forward()) * double(valid) : 0.0;
  }
  const int64_t d = scenario_.model.d_model;
  codec_->encode(n, kernels::host_view(k_, model_.output_residual(), size_t(n * d), host_), tokens_, boundary);
  packed = compress::pack(boundary);
  return 0;
}

double PipelineRank::forward(const Groups& g, int m, const Microbatch& mb, int slot) {
  const int64_t n = rows_of(mb);
  compress::CodecMessage& boundary = boundary_[size_t(slot)];
  if (stage_ > 0) {
    std::vector<uint8_t> bytes;
    g.pipeline.recv_message(stage_ - 1, tag_act(m), bytes, comm::Wire("act", codec_->message_bytes(n)));
    // A transport that delivers nothing (comm::NullCommunicator, a dry run): what a dry codec sends, no values.
    if (bytes.empty()) boundary = compress::CodecMessage{};
    else compress::unpack(bytes.data(), bytes.size(), boundary);
    compress::check_layout(boundary.layout(), codec_->message_layout(n), "pipeline boundary message");
  }
  const compress::CodecMessage* received = stage_ > 0 ? &boundary : nullptr;
  std::vector<uint8_t> packed;
  double loss_sum = 0;
  if (!context_) {
    ComputeSpan sp(spans_, "stage_fwd", costs_.forward(stage_));
    begin_microbatch(m, mb, slot, received);
    model_.forward_layers(attention_[size_t(slot)]);
    loss_sum = end_microbatch(m, n, boundary, packed);
    sp.done();
  } else {
    const bool first = stage_ == 0, last = stage_ == stages_ - 1;
    ComputeSpan in(spans_, "stage_in", first ? costs_.context().embed(c_) : cost::Cost{});
    begin_microbatch(m, mb, slot, received);
    in.done();
    for (int l = model_.layout().first_layer(); l < model_.layout().end_layer(); ++l)
      context_->forward_layer(*g.context, l);
    ComputeSpan out(spans_, "stage_out", last ? costs_.context().head(c_) : cost::Cost{});
    loss_sum = end_microbatch(m, n, boundary, packed);
    out.done();
  }
  if (stage_ < stages_ - 1)
    g.pipeline.send(stage_ + 1, tag_act(m), packed.data(), packed.size(), comm::Wire("act", boundary.wire_bytes));
  return loss_sum;
}

void PipelineRank::backward(const Groups& g, int m, const Microbatch& mb, int slot, int64_t valid_total) {
  const int64_t n = rows_of(mb), d = scenario_.model.d_model;
  const compress::CodecMessage& boundary = boundary_[size_t(slot)];
  const bool first = stage_ == 0, last = stage_ == stages_ - 1;
  compress::CodecGradient grad;
  if (!last) {
    std::vector<uint8_t> bytes(compress::packed_gradient_bytes(codec_->gradient_floats(n)));
    g.pipeline.recv(stage_ + 1, tag_act_grad(m), bytes.data(), bytes.size(),
                    comm::Wire("act_grad", codec_->gradient_bytes(n)));
    compress::unpack(bytes.data(), bytes.size(), grad);
    compress::check_gradient(grad, codec_->gradient_floats(n), "pipeline boundary gradient");
  }
  // The stage's output gradient: the loss's on the last stage, else the next stage's.
  auto begin_backward = [&] {
    model_.use_slot(slot);
    if (context_) context_->use_slot(slot);
    const int64_t valid = local_valid_[size_t(m)];
    if (last) model_.head_backward(valid > 0 ? float(double(valid) / double(valid_total)) : 0.0f);
    else write_from_host(model_.residual_grad(), size_t(n * d), [&](float* dx) { codec_->decode_gradient(n, grad, boundary, dx); });
  };
  std::vector<uint8_t> packed;
  compress::CodecGradient back;
  auto end_backward = [&] {
    model_.embedding_backward();
    if (first) return;
    codec_->encode_gradient(n, kernels::host_view(k_, model_.residual_grad(), size_t(n * d), host_), boundary, back);
    packed = compress::pack(back);
  };
  if (!context_) {
    ComputeSpan sp(spans_, "stage_bwd", costs_.backward(stage_));
    begin_backward();
    model_.backward_layers(attention_[size_t(slot)]);
    end_backward();
    sp.done();
  } else {
    ComputeSpan out(spans_, "stage_out_bwd", last ? cost::dense_backward(costs_.context().head(c_)) : cost::Cost{});
    begin_backward();
    out.done();
    for (int l = model_.layout().end_layer() - 1; l >= model_.layout().first_layer(); --l)
      context_->backward_layer(*g.context, l);
    ComputeSpan in(spans_, "stage_in_bwd", first ? cost::dense_backward(costs_.context().embed(c_)) : cost::Cost{});
    end_backward();
    in.done();
  }
  if (!first)
    g.pipeline.send(stage_ - 1, tag_act_grad(m), packed.data(), packed.size(), comm::Wire("act_grad", back.wire_bytes));
}

void PipelineRank::prepare(int microbatches, int slots) {
  if (!context_)
    while (attention_.size() < size_t(slots)) attention_.emplace_back(k_.device);
  if (boundary_.size() < size_t(slots)) boundary_.resize(size_t(slots));
  local_valid_.assign(size_t(microbatches), 0);
}

RankStepResult PipelineRank::train_step(comm::Communicator& world, int step, const int32_t* inputs,
                                        const int32_t* targets, int sequences, const SynchronousReplicas* data) {
  return with_groups(world, [&](const Groups& g) { return train_step(g, step, inputs, targets, sequences, data); });
}

RankStepResult PipelineRank::train_step(const Groups& g, int step, const int32_t* inputs, const int32_t* targets,
                                        int sequences, const SynchronousReplicas* data) {
  const std::vector<Microbatch> mbs = split(inputs, targets, sequences);
  const int M = int(mbs.size());
  // A microbatch's slot: the ones held at once are consecutive, at most in_flight.
  const int in_flight = pipeline_in_flight(scenario_.parallel.schedule, stages_, stage_, M);
  prepare(M, in_flight);
  int64_t valid_total = 0;
  for (const Microbatch& mb : mbs) valid_total += mb.valid;
  if (data) valid_total = data->valid_all;
  if (context_) {
    context_->begin_codec_step(g.world, step);
    context_->codec().zero_grads();
  }

  model_.zero_grads();
  double loss_sum = 0;
  for (const PipelineOp& op : pipeline_schedule(scenario_.parallel.schedule, stages_, stage_, M)) {
    const Microbatch& mb = mbs[size_t(op.microbatch)];
    const int slot = op.microbatch % in_flight;
    if (op.forward) loss_sum += forward(g, op.microbatch, mb, slot);
    else backward(g, op.microbatch, mb, slot, valid_total);
  }
  RankStepResult res;
  // The context ranks' shares of the stage's gradients summed (all_reduce), then the replicas'.
  const std::vector<sync::GradBucket> buckets = sync::gradient_buckets(model_.layout());
  if (context_ && sync_.sums_gradients())
    for (const sync::GradBucket& b : buckets) sync_.all_reduce_bucket(*g.context, model_, b);
  if (data && data->group)
    for (const sync::GradBucket& b : buckets) sync_.all_reduce_bucket(*data->group, model_, b);
  if (context_ || (data && data->group)) {
    spans_.log.join_deferred();
    sync_.join_buckets(g.world);
  }
  if (context_) {  // the other weight syncs (the layout check allows them without data replicas only)
    int64_t valid_rank = 0;
    for (int64_t v : local_valid_) valid_rank += v;
    sync_.before_optimizer(*g.context, model_, step, valid_rank, valid_total);
    res.weight_sync = sync_.syncs_at(step);
  }
  constraint_.project(model_, /*grads=*/true);
  // The loss sum, then the squared gradient norm: once per stage where the
  // stage's ranks step on the same gradients, else one per context rank.
  const bool own_gradients = context_ && !sync_.same_gradients();
  const int norms = own_gradients ? context_ranks_ : 1, norm_at = own_gradients ? 1 + c_ : 1;
  std::vector<double> sums(size_t(1 + norms), 0.0);
  sums[0] = loss_sum;
  if (own_gradients || c_ == 0) sums[size_t(norm_at)] = optimizer_.squared_grad_norm(model_.grads());
  // With them the K/V codec's error sums (a diagnostic), not a collective of their own.
  if (context_) context_->append_error_sums(sums);
  g.world.all_reduce_sum(sums.data(), int64_t(sums.size()), comm::Wire("loss"));
  if (context_) {
    context_->take_error_sums(sums.data() + 1 + norms);
    context_->reconstruction_errors(res.kv_reconstruction_error_k, res.kv_reconstruction_error_v);
  }

  res.loss = valid_total > 0 ? float(sums[0] / double(valid_total)) : 0.0f;
  res.lr = lr_.at(step + 1);
  ComputeSpan sp(spans_, "optimizer", costs_.optimizer(stage_));
  res.grad_norm =
      optimizer_.step_with_norm(model_.params(), model_.grads(), res.lr, std::sqrt(sums[size_t(norm_at)])).grad_norm;
  if (!own_gradients) constraint_.project(model_, /*grads=*/false);
  sp.done();
  if (context_) sync_.after_optimizer(*g.context, model_, step);
  // sparse, sparse_update move the weights after the step: back into span(U) then.
  if (own_gradients) constraint_.project(model_, /*grads=*/false);
  if (context_) context_->step_codec(g.world, res.lr);
  return res;
}

void broadcast_embedding_table(comm::Communicator& pipeline, const ModelConfig& model, float* table) {
  const int64_t count = int64_t(model.vocab) * model.d_model;
  pipeline.broadcast(table, count, comm::DType::f32, 0,
                     comm::Wire("embed_snapshot", double(count) * model.bytes_per_element));
}

void PipelineRank::snapshot_embedding(comm::Communicator& world) {
  if (!codec_->centres_on_embedding()) return;
  with_groups(world, [&](const Groups& g) {
    const ModelConfig& c = scenario_.model;
    if (k_.device == kernels::Device::dry) return broadcast_embedding_table(g.pipeline, c, nullptr);
    std::vector<float> table(size_t(c.vocab) * size_t(c.d_model));
    if (stage_ == 0)
      k_.download(table.data(), model_.params() + model_.layout().embedding(), table.size() * sizeof(float));
    broadcast_embedding_table(g.pipeline, c, table.data());
    codec_->set_embedding_table(std::move(table));
  });
}

void PipelineRank::save_boundary_state(std::ostream& out) const {
  if (codec_->centres_on_embedding()) binary::write_vector(out, codec_->embedding_table());
}

void PipelineRank::load_boundary_state(std::istream& in) {
  if (codec_->centres_on_embedding()) codec_->set_embedding_table(binary::read_vector<float>(in, "the boundary's embedding snapshot"));
}

float PipelineRank::evaluate(comm::Communicator& world, const int32_t* inputs, const int32_t* targets,
                             int sequences) {
  return with_groups(world, [&](const Groups& g) {
    const std::vector<Microbatch> mbs = split(inputs, targets, sequences);
    prepare(int(mbs.size()), 1);
    double sums[2] = {0, 0};  // the loss sum, the valid targets (the last stage's rows: each counted once)
    for (size_t m = 0; m < mbs.size(); ++m) {
      sums[0] += forward(g, int(m), mbs[m], 0);
      if (stage_ == stages_ - 1) sums[1] += double(local_valid_[m]);
    }
    g.world.all_reduce_sum(sums, 2, comm::Wire("loss"));
    return sums[1] > 0 ? float(sums[0] / sums[1]) : 0.0f;
  });
}

}  // namespace lowband::parallel
