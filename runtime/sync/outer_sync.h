#pragma once
// The weight synchronisation of data-parallel replicas that train on their own
// for H steps (DiLoCo, SparseLoCo): what a data-parallel trainer calls on each
// rank, with a communicator over the ranks that hold the same part of the model
// in every replica (one rank per replica).
//
//   sync::OuterSync outer(scenario.parallel.data_sync, part_layout, params);   // θ_start <- params
//   for (int step = 0; ...; ++step) {
//     ...inner step (AdamW) on this replica's batch...
//     if (outer.syncs_at(step)) stats = outer.outer_step(data_group, params);
//   }
//
// One outer step: Δ = θ_start − θ; then
//  - diloco: the all-reduce (float32 sum in ring order, Wire "pseudo_grad", 4 bytes
//    per parameter) of Δ, g = sum / R, outer Nesterov SGD (outer_optimizer.h);
//    at outer_gradient_bits <= 8 Δ quantised per tensor (pack.h: pack_dense), the messages
//    all-gathered and g the mean of what they decode to;
//  - sparseloco: the replica's message compressed with error feedback
//    (sparseloco.h), packed (pack.h), one all-gather of every replica's packed
//    bytes (Wire "pseudo_grad": R × packed_bytes on the gather; through the
//    relay where data_sync.exchange says so), every message decoded and
//    aggregated (aggregate.h), outer plain SGD.
// Every rank computes the same update from the same data in the same order, so
// replicas that start equal stay bit-identical. θ_start <- θ afterwards.
// Parameters are host float32 (the trainer copies device memory in and out).
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <vector>

#include "comm/communicator.h"
#include "runtime/cost_model.h"
#include "runtime/model/param_layout.h"
#include "runtime/scenario/scenario.h"
#include "runtime/sync/sparseloco.h"
#include "runtime/sync/sync_period.h"

namespace lowband::sync {

struct OuterStats {
  int64_t outer_step = 0;  // outer steps taken, this one included
  int64_t elements = 0;    // parameters synchronised
  int64_t sent = 0;        // entries this replica sent (diloco: every parameter)
  double wire_bytes = 0;   // this replica's message (diloco: its all-reduce buffer)
};

class OuterSync {
 public:
  // Throws std::invalid_argument for method all_reduce (the every-step gradient
  // all-reduce is parallel::ReplicaSync's). params_host null: a dry run's
  // (kernels::Device::dry), which holds no weights: start() makes the
  // collective of the message's size over data_group and computes nothing,
  // finish() and rebase() change nothing.
  OuterSync(const DataSyncConfig& config, const model::ParamLayout& part, const float* params_host);

  // Whether the outer step follows inner step `step` (from 0): every H steps.
  bool syncs_at(int step) const { return sync::syncs_at(config_.inner_steps, step); }
  // Every rank of `data_group` calls it together; params_host (the part's
  // parameters) <- the outer step's result. around_exchange(false) just before
  // the collective, (true) just after it: where the compute before it (Δ, the
  // compression) ends and the compute after it (decoding, the outer optimiser)
  // starts, so that a trainer can log both spans.
  OuterStats outer_step(comm::Communicator& data_group, float* params_host,
                        const std::function<void(bool after)>& around_exchange = {});
  // The same in three parts, for a rank holding several parts (their
  // collectives in flight together) and for merges that come delay_steps (τ)
  // after the issue:
  //  - stage: the message from params_host now (Δ = θ_start − θ; sparseloco
  //    compresses it and updates its error buffer);
  //  - launch: its collective, on data_group. Blocking: done when it returns. Deferred: the caller waits for it
  //    with data_group.wait_deferred() and joins it in its log (join_deferred)
  //    before finish. In the background (τ > 0): the same wait, but the log joins
  //    it only at RankLog::join_background, in the step that merges it, so that
  //    the inner steps between overlap it in the replayed graph;
  //  - finish: the merge of the exchange launched last: θ_start takes the outer
  //    step, params_host <- local_weight·params_host + (1 − local_weight)·θ_start.
  // A step that merges one exchange and issues the next (τ = H) stages first
  // (the Δ of the weights the round ended with), then finishes, then launches.
  // before_exchange() runs just before the collective, as around_exchange(false).
  void stage(const float* params_host);
  enum class Launch { blocking, deferred, background };
  void launch(comm::Communicator& data_group, Launch how, const std::function<void()>& before_exchange = {});
  void start(comm::Communicator& data_group, const float* params_host, const std::function<void()>& before_exchange = {}) {
    stage(params_host);
    launch(data_group, Launch::deferred, before_exchange);
  }
  OuterStats finish(float* params_host);
  // Partial participation (data_sync.deadline_seconds, quorum; participation.h;
  // diloco): the replicas that made the round exchange among themselves (their
  // data group), so g is the mean of their Δ; a late replica stages nothing and
  // takes their exchange's result from one of them instead: send_result (that
  // one, after its collective, before finish) and receive_result (each late
  // one, over `to_late`: the sender, group rank `root`, and the late replicas),
  // then finish as the others do. `participants`: how many made it.
  void send_result(comm::Communicator& to_late, int root);
  void receive_result(comm::Communicator& from_root, int root, int participants);
  // With τ = H the merge of round k's exchange comes with round k + 1's issue;
  // after round 0 none has arrived: the merge of an average of nothing (each
  // replica's weights back to θ_start, as every later round starts from the
  // last global weights; eager: its own staged Δ / replicas applied at once).
  OuterStats finish_first_round(float* params_host, int replicas);
  bool staged() const { return staged_.ready; }
  bool in_flight() const { return in_flight_.started; }
  // What those two spans cost for `elements` parameters (memory traffic of the
  // passes over them: the device profile's seconds for a dry run or profile
  // timing).
  static cost::Cost before_exchange_cost(const DataSyncConfig& config, int64_t elements);
  static cost::Cost after_exchange_cost(const DataSyncConfig& config, int64_t elements);
  // One replica's message on the wire for `part`: diloco 4 bytes per parameter;
  // sparseloco packed_bytes (pack.h).
  static int64_t message_bytes(const DataSyncConfig& config, const model::ParamLayout& part);
  int64_t message_bytes() const { return message_bytes_; }
  // diloco at outer_gradient_bits <= 8: its Δ quantised (pack.h: pack_dense) and all-gathered.
  bool quantised() const { return config_.method == DataSyncMethod::diloco && config_.outer_gradient_bits <= 8; }
  int64_t elements() const { return elements_; }
  bool dry() const { return dry_; }
  // θ_start <- params_host: the caller moved the part's weights after the outer
  // step (projected them back into a constraint), so that the next Δ measures
  // the inner steps alone.
  void rebase(const float* params_host) {
    if (!dry_) theta_start_.assign(params_host, params_host + elements_);
  }

  // θ_start, the outer momentum (diloco), the error buffer (sparseloco), the
  // outer step count and an exchange in flight (its collective's result, which a
  // resumed run merges without sending it again); bit-exact.
  void save_state(std::ostream& out) const;
  // Throws binary::BinaryFormatError for a state of another method or size.
  void load_state(std::istream& in);

  const std::vector<float>& theta_start() const { return theta_start_; }
  const std::vector<float>& momentum() const { return momentum_; }
  const std::vector<float>& error() const { return error_; }
  const ChunkPlan& plan() const { return plan_; }
  const SparseCodec& codec() const { return codec_; }

 private:
  DataSyncConfig config_;
  int64_t elements_;
  int64_t message_bytes_;
  bool dry_;
  ChunkPlan plan_;  // sparseloco only
  std::vector<model::TensorInfo> tensors_;  // quantised diloco only
  SparseCodec codec_;
  std::vector<float> theta_start_, momentum_, error_;
  int64_t outer_steps_ = 0;
  // Between stage and launch: the message.
  struct Staged {
    bool ready = false;
    int64_t sent = 0;
    std::vector<float> delta;     // diloco: Δ
    std::vector<uint8_t> packed;  // sparseloco: the packed message
  } staged_;
  // Between launch and finish: the collective's buffers (in flight while deferred).
  struct InFlight {
    bool started = false;
    int replicas = 0;
    int64_t sent = 0;
    std::vector<float> delta;  // diloco: summed in place
    std::vector<float> own;    // diloco, eager: this replica's Δ before the sum
    std::vector<uint8_t> packed, gathered;  // sparseloco
  } in_flight_;
  // The averaged pseudo-gradient of the exchange in flight (eager: with this
  // replica's share of it replaced by its staged Δ).
  std::vector<float> outer_gradient() const;
};

}  // namespace lowband::sync
