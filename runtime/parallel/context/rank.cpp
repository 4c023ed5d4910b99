#include "runtime/parallel/context/rank.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/error.h"
#include "runtime/parallel/layout.h"

namespace lowband::parallel {

namespace {

// The step's scenario with one slot's share of the batch: what each slot's
// compute spans cost.
Scenario slot_scenario(Scenario s) {
  s.training.batch_size = std::max(1, s.training.batch_size / sequences_in_flight(s.parallel));
  return s;
}

}  // namespace

ContextRank::ContextRank(const Scenario& s, int rank, std::unique_ptr<compress::KvCodec> codec,
                         const kernels::Backend& k, ComputeTiming timing, comm::RankLog& log)
    : scenario_(s), slot_scenario_(slot_scenario(s)), rank_(rank), L_(s.model.layers),
      costs_(slot_scenario_),
      spans_{k, log, timing, kernel_wall_seconds_,
             [this](const cost::Cost& c, const char* kind) { return costs_.seconds(rank_, c, kind); }},
      sync_(scenario_, k), model_(s.model, s.training.seed, model::ModelOptions{.device = k.device}),
      optimizer_(model_.layout(), optim::optimizer_config_from(s.training), k.device),
      lr_(optim::lr_schedule_from(s.training)), attention_(scenario_, rank, std::move(codec), model_, costs_, spans_) {}

void ContextRank::use_slot(int slot) {
  model_.use_slot(slot);
  attention_.use_slot(slot);
}

int ContextRank::begin(const int32_t* inputs, const int32_t* targets, int sequences, bool training) {
  const int wanted = sequences_in_flight(scenario_.parallel);
  if (training && sequences % wanted != 0)
    throw InputError("parallel.microbatches", std::to_string(wanted) + " sequences in flight do not divide the " +
                                                  std::to_string(sequences) + " sequences of a step");
  const int slots = sequences % wanted == 0 ? wanted : 1;  // an evaluation batch of another size: one
  const int per_slot = sequences / slots;
  valid_global_ = 0;
  if (targets)
    for (int64_t i = 0; i < int64_t(sequences) * scenario_.model.seq_len; ++i) valid_global_ += targets[i] >= 0;
  valid_local_.assign(size_t(slots), 0);
  for (int m = 0; m < slots; ++m) {
    use_slot(m);
    const int64_t offset = int64_t(m) * per_slot * scenario_.model.seq_len;
    const model::TokenBatch b = attention_.gather(inputs + offset, targets ? targets + offset : nullptr, per_slot,
                                                  m * per_slot);
    valid_local_[size_t(m)] = attention_.valid();
    ComputeSpan sp(spans_, "embed", costs_.embed(rank_));
    model_.begin(b);
    sp.done();
  }
  return slots;
}

// Layer by layer, each slot's half-layers interleaved: slot m's K/V for layer
// l + 1 leave as soon as its layer l is done, and cross the links while the
// other slots finish layer l. With one slot: send, finish, layer by layer.
void ContextRank::forward_layers(comm::Communicator& comm, int slots) {
  for (int m = 0; m < slots; ++m) use_slot(m), attention_.forward_layer_send(comm, 0);
  for (int l = 0; l < L_; ++l)
    for (int m = 0; m < slots; ++m) {
      use_slot(m);
      attention_.forward_layer_finish(comm, l);
      if (l + 1 < L_) attention_.forward_layer_send(comm, l + 1);
    }
}

void ContextRank::start_loss(comm::Communicator& comm, int slots, bool backward) {
  // Every rank reads the whole batch, so it counts the valid targets of all
  // ranks itself (begin); only the loss crosses ranks, for reporting (the
  // backward does not wait for it: deferred), and with it, training, the codec's
  // error sums (a diagnostic; the loss stays element 0, so its sum is the same).
  // Evaluating, the right argmaxes ride along as element 1 (answer accuracy).
  loss_sums_.assign(backward ? 1 : 2, 0.0);
  for (int m = 0; m < slots; ++m) {
    use_slot(m);
    ComputeSpan head(spans_, "lm_head", costs_.head(rank_));
    const float loss = model_.head_forward();
    head.done();
    const int64_t valid = valid_local_[size_t(m)];
    if (valid > 0) loss_sums_[0] += double(loss) * double(valid);
    if (!backward && valid > 0) loss_sums_[1] += double(model_.correct_predictions());
  }
  if (backward) attention_.append_error_sums(loss_sums_);
  comm.all_reduce_sum(loss_sums_.data(), int64_t(loss_sums_.size()), comm::Wire("loss", -1, /*deferred=*/backward));
  if (!backward) {
    last_eval_correct_ = int64_t(loss_sums_[1] + 0.5);
    return;
  }
  model_.zero_grads();
  for (int m = 0; m < slots; ++m) {
    use_slot(m);
    const double valid = double(valid_local_[size_t(m)]);
    ComputeSpan sp(spans_, "lm_head_bwd", cost::dense_backward(costs_.head(rank_)));
    model_.head_backward(valid_global_ > 0 ? float(valid / double(valid_global_)) : 0.0f);
    sp.done();
  }
}

float ContextRank::finish_loss(bool backward) {
  if (backward) attention_.take_error_sums(loss_sums_.data() + 1);
  return valid_global_ > 0 ? float(loss_sums_[0] / double(valid_global_)) : 0.0f;
}

float ContextRank::forward_backward(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                                    int sequences, bool sync_gradients, const SynchronousReplicas* data) {
  attention_.codec().zero_grads();
  const int slots = begin(inputs, targets, sequences, true);
  if (data) valid_global_ = data->valid_all;
  forward_layers(comm, slots);
  start_loss(comm, slots, true);
  const std::vector<sync::GradBucket> buckets = sync::gradient_buckets(model_.layout());
  size_t next_bucket = 0;
  auto sync_bucket = [&]() {
    if (sync_gradients) sync_.all_reduce_bucket(comm, model_, buckets[next_bucket]);
    if (sync_gradients && data && data->group) sync_.all_reduce_bucket(*data->group, model_, buckets[next_bucket]);
    ++next_bucket;
  };
  sync_bucket();  // the head
  // As the forward, from the last layer: a layer's bucket is whole once every
  // slot has finished it.
  for (int m = 0; m < slots; ++m) use_slot(m), attention_.backward_layer_send(comm, L_ - 1);
  for (int l = L_ - 1; l >= 0; --l)
    for (int m = 0; m < slots; ++m) {
      use_slot(m);
      attention_.backward_layer_finish(comm, l);
      if (m == slots - 1) sync_bucket();
      if (l > 0) attention_.backward_layer_send(comm, l - 1);
    }
  for (int m = 0; m < slots; ++m) {
    use_slot(m);
    ComputeSpan sp(spans_, "embed_bwd", cost::dense_backward(costs_.embed(rank_)));
    model_.embedding_backward();
    sp.done();
  }
  sync_bucket();
  // The optimiser needs every gradient bucket, and the loss its sum.
  spans_.log.join_deferred();
  sync_.join_buckets(comm);
  return finish_loss(true);
}

float ContextRank::evaluate(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                            int sequences) {
  const int slots = begin(inputs, targets, sequences, false);
  forward_layers(comm, slots);
  start_loss(comm, slots, false);
  return finish_loss(false);
}

RankStepResult ContextRank::train_step(comm::Communicator& comm, int step, const int32_t* inputs,
                                       const int32_t* targets, int sequences, const SynchronousReplicas* data) {
  RankStepResult res;
  attention_.begin_codec_step(comm, step);
  res.loss = forward_backward(comm, inputs, targets, sequences, sync_.sums_gradients(), data);
  attention_.reconstruction_errors(res.kv_reconstruction_error_k, res.kv_reconstruction_error_v);
  res.weight_sync = sync_.syncs_at(step);
  res.lr = lr_.at(step + 1);
  sync_.before_optimizer(comm, model_, step, valid_local(), valid_global_);
  ComputeSpan sp(spans_, "optimizer", costs_.optimizer());
  res.grad_norm = optimizer_.step(model_.params(), model_.grads(), res.lr).grad_norm;
  sp.done();
  sync_.after_optimizer(comm, model_, step);
  attention_.step_codec(comm, res.lr);
  return res;
}

}  // namespace lowband::parallel
