#include "runtime/parallel/context/rank.h"

#include "common/error.h"

namespace lowband::parallel {

ContextRank::ContextRank(const Scenario& s, int rank, std::unique_ptr<compress::KvCodec> codec,
                         const kernels::Backend& k, ComputeTiming timing, comm::RankLog& log)
    : scenario_(s), rank_(rank), L_(s.model.layers), k_(k), costs_(scenario_),
      spans_{k, log, timing, kernel_wall_seconds_,
             [this](const cost::Cost& c, const char* kind) { return costs_.seconds(rank_, c, kind); }},
      sync_(scenario_, k), model_(s.model, s.training.seed, model::ModelOptions{.device = k.device}),
      optimizer_(model_.layout(), optim::optimizer_config_from(s.training), k.device),
      lr_(optim::lr_schedule_from(s.training)), attention_(scenario_, rank, std::move(codec), model_, costs_, spans_) {}

void ContextRank::begin(const int32_t* inputs, const int32_t* targets, int sequences) {
  const model::TokenBatch b = attention_.gather(inputs, targets, sequences, 0);
  valid_global_ = 0;
  if (targets)
    for (int64_t i = 0; i < int64_t(sequences) * scenario_.model.seq_len; ++i) valid_global_ += targets[i] >= 0;
  ComputeSpan sp(spans_, "embed", costs_.embed(rank_));
  model_.begin(b);
  sp.done();
}

float ContextRank::global_loss(comm::Communicator& comm, bool backward) {
  // Every rank reads the whole batch, so it counts the valid targets of all
  // ranks itself (begin); only the loss crosses ranks, for reporting (the
  // backward does not wait for it), and with it, training, the codec's error
  // sums (a diagnostic; the loss stays element 0, so its sum is the same).
  const int64_t valid = attention_.valid();
  ComputeSpan head(spans_, "lm_head", costs_.head(rank_));
  const float loss = model_.head_forward();
  head.done();
  std::vector<double> sums{valid > 0 ? double(loss) * double(valid) : 0.0};
  if (backward) attention_.append_error_sums(sums);
  comm.all_reduce_sum(sums.data(), int64_t(sums.size()), comm::Wire("loss", -1, /*deferred=*/backward));
  if (backward) attention_.take_error_sums(sums.data() + 1);
  const double sum = sums[0];
  if (backward) {
    model_.zero_grads();
    ComputeSpan sp(spans_, "lm_head_bwd", cost::dense_backward(costs_.head(rank_)));
    model_.head_backward(valid_global_ > 0 ? float(double(valid) / double(valid_global_)) : 0.0f);
    sp.done();
  }
  return valid_global_ > 0 ? float(sum / double(valid_global_)) : 0.0f;
}

float ContextRank::forward_backward(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                                    int sequences, bool sync_gradients, const DataStep* data) {
  attention_.codec().zero_grads();
  begin(inputs, targets, sequences);
  if (data) valid_global_ = data->valid_all;
  for (int l = 0; l < L_; ++l) attention_.forward_layer(comm, l);
  const float loss = global_loss(comm, true);
  const std::vector<sync::GradBucket> buckets = sync::gradient_buckets(model_.layout());
  size_t next_bucket = 0;
  auto sync_bucket = [&]() {
    if (sync_gradients) sync_.all_reduce_bucket(comm, model_, buckets[next_bucket]);
    if (sync_gradients && data && data->group) sync_.all_reduce_bucket(*data->group, model_, buckets[next_bucket]);
    ++next_bucket;
  };
  sync_bucket();  // the head
  for (int l = L_ - 1; l >= 0; --l) {
    attention_.backward_layer(comm, l);
    sync_bucket();
  }
  ComputeSpan sp(spans_, "embed_bwd", cost::dense_backward(costs_.embed(rank_)));
  model_.embedding_backward();
  sp.done();
  sync_bucket();
  return loss;
}

float ContextRank::evaluate(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                            int sequences) {
  begin(inputs, targets, sequences);
  for (int l = 0; l < L_; ++l) attention_.forward_layer(comm, l);
  return global_loss(comm, false);
}

RankStepResult ContextRank::train_step(comm::Communicator& comm, int step, const int32_t* inputs,
                                       const int32_t* targets, int sequences, const DataStep* data) {
  RankStepResult res;
  attention_.begin_codec_step(comm, step);
  res.loss = forward_backward(comm, inputs, targets, sequences, sync_.sums_gradients(), data);
  attention_.reconstruction_errors(res.kv_reconstruction_error_k, res.kv_reconstruction_error_v);
  res.weight_sync = sync_.syncs_at(step);
  res.lr = lr_.at(step + 1);
  spans_.log.join_deferred();  // the optimiser needs every gradient bucket
  sync_.before_optimizer(comm, model_, step, attention_.valid(), valid_global_);
  ComputeSpan sp(spans_, "optimizer", costs_.optimizer());
  res.grad_norm = optimizer_.step(model_.params(), model_.grads(), res.lr).grad_norm;
  sp.done();
  sync_.after_optimizer(comm, model_, step);
  attention_.step_codec(comm, res.lr);
  return res;
}

}  // namespace lowband::parallel
