#pragma once
// One rank of context parallelism (SPMD): its model replica, its optimiser and
// its own K/V codec; it meets the other ranks only through a communicator.
//
// Each sequence is split over the P ranks (contiguous or zigzag; positions are
// global). Per layer a rank computes Q, K, V for its chunk and encodes its K/V
// blocks into one message; the exchange sends it around a ring (each rank
// forwards what it received last round) or straight to every other rank
// (all_gather). The rank attends to its own exact block first, then to each
// decoded block as it arrives, merging by log-sum-exp. In the backward it
// computes dK/dV for every block it attended to, encodes the gradient for each
// remote owner and sends it back: ring — one accumulator per owner passed
// along, each rank adding its part; all_gather — straight to the owner, who
// sums the partials in rank order. Everything else that crosses ranks is a
// collective: the loss and the global count of valid targets ("loss"), the
// weight sync (weight_sync.h), the codec's parameter gradients ("codec_grad")
// and its warm-up Gram sums ("codec_fit").
//
// Every compute span is logged (comm::RankLog) with its measured seconds (a
// steady clock, after waiting for the GPU) or the device profile's
// (context_costs.h), under the step graph's tags: "embed", "qkv", "attention"
// (per block), "mlp", "lm_head", the same with "_bwd", and "optimizer". With a
// comm::RecordingCommunicator the log then holds the whole step.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/recording.h"
#include "kernels/backend_buffer.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/model/model.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/parallel/compute_span.h"
#include "runtime/parallel/context_costs.h"
#include "runtime/parallel/weight_sync.h"
#include "runtime/scenario/scenario.h"

namespace lowband::parallel {

struct RankStepResult {
  float loss = 0;        // mean over every valid target of the batch (all ranks)
  double lr = 0;
  double grad_norm = 0;  // before clipping
  bool weight_sync = true;
  // Per layer, ‖Z − Ẑ‖_F / ‖Z‖_F of what receivers saw of K and of V this step,
  // summed over all ranks; empty unless compressing.
  std::vector<double> kv_reconstruction_error_k, kv_reconstruction_error_v;
};

class ContextRank {
 public:
  // rank: this rank's index in the context group (comm's rank when it runs).
  ContextRank(const Scenario& scenario, int rank, std::unique_ptr<compress::KvCodec> codec,
              const kernels::Backend& k, ComputeTiming timing, comm::RankLog& log);

  int rank() const { return rank_; }
  model::Model& model() { return model_; }
  const model::Model& model() const { return model_; }
  optim::AdamW& optimizer() { return optimizer_; }
  const optim::AdamW& optimizer() const { return optimizer_; }
  compress::KvCodec& codec() { return *codec_; }
  const compress::KvCodec& codec() const { return *codec_; }
  const ReplicaSync& sync() const { return sync_; }

  // inputs, targets: the whole batch (sequences, seq_len), row-major, targets < 0
  // ignored; the rank takes its own tokens. Afterwards grads() hold this rank's
  // share (dloss = valid_local / valid_global) unless sync_gradients, which sums
  // them over the ranks bucket by bucket as the backward goes. Returns the
  // global mean loss.
  float forward_backward(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets,
                         int sequences, bool sync_gradients);
  // A whole training step (step counts from 0).
  RankStepResult train_step(comm::Communicator& comm, int step, const int32_t* inputs,
                            const int32_t* targets, int sequences);
  // Mean loss over the valid targets, forward only (the codec applies).
  float evaluate(comm::Communicator& comm, const int32_t* inputs, const int32_t* targets, int sequences);

  // The codec's AdamW moments (its parameters are stepped here, identically on every rank).
  std::vector<float>& codec_m() { return codec_m_; }
  std::vector<float>& codec_v() { return codec_v_; }
  int64_t& codec_steps() { return codec_steps_; }
  const std::vector<float>& codec_m() const { return codec_m_; }
  const std::vector<float>& codec_v() const { return codec_v_; }
  int64_t codec_steps() const { return codec_steps_; }
  // Measured wall seconds of the rank's compute spans since the last call.
  double take_kernel_wall_seconds() { double s = kernel_wall_seconds_; kernel_wall_seconds_ = 0; return s; }

 private:
  using Buffer = kernels::BackendBuffer<float>;
  class Span;  // one logged compute span

  void begin(const int32_t* inputs, const int32_t* targets, int sequences);
  void forward_layer(comm::Communicator& comm, int l);
  void backward_layer(comm::Communicator& comm, int l);
  float global_loss(comm::Communicator& comm, bool backward);
  void attend(int l, int owner, bool backward, float* dk, float* dv);
  void encode_blocks(int l, std::vector<uint8_t>& message);
  void decode_blocks(int l, int owner, const std::vector<uint8_t>& message);
  void encode_gradients(int l, int owner, const float* dk, const float* dv, std::vector<compress::CodecGradient>& out);
  void decode_gradients(int l, const std::vector<compress::CodecGradient>& summed);
  void step_codec(comm::Communicator& comm, double lr);
  void begin_codec_step(comm::Communicator& comm, int step);
  void reconstruction_errors(comm::Communicator& comm, RankStepResult& out);
  int64_t rows(int owner) const { return int64_t(sequences_) * local_tokens_[size_t(owner)]; }
  int owner_at(int k) const { return ((rank_ - k) % P_ + P_) % P_; }
  compress::KvBlockId block_id(int l, compress::KvTensor t, int owner, int chunk, int sequence) const;
  template <class F> void for_each_block(int l, int owner, F f) const;
  size_t block_count(int owner) const;  // K and V blocks of owner's chunks over the batch

  Scenario scenario_;
  int rank_, P_, L_;
  int64_t seq_len_, kv_row_;
  const kernels::Backend& k_;
  ComputeTiming timing_;
  comm::RankLog& log_;
  ContextCosts costs_;
  ReplicaSync sync_;
  std::unique_ptr<compress::KvCodec> codec_;
  model::Model model_;
  optim::AdamW optimizer_;
  optim::LrSchedule lr_;
  std::vector<std::vector<TokenRange>> ranges_;       // per rank
  std::vector<std::vector<int64_t>> chunk_row_;       // per rank: local row of each range's start
  std::vector<std::vector<std::vector<int64_t>>> chunk_positions_;  // [rank][chunk]: global positions
  std::vector<int64_t> local_tokens_;                 // per rank, of one sequence

  int sequences_ = 0;
  int64_t valid_ = 0, valid_global_ = 0;  // targets >= 0: this rank's, the whole batch's
  std::vector<int32_t> inputs_, targets_;
  std::vector<int64_t> positions_;
  // [layer][owner]: the decoded K/V of remote owners (what this rank attended to).
  std::vector<std::vector<Buffer>> k_hat_, v_hat_;
  std::vector<Buffer> lse_;  // [layer]: (rows, heads) of the merged attention
  std::vector<char> started_;  // per (sequence, query chunk): output written this layer
  Buffer tmp_out_, tmp_lse_, delta_, dk_part_, dv_part_;
  std::vector<float> host_a_, host_b_;  // staging for the codec on a GPU backend
  std::vector<float> codec_m_, codec_v_;
  int64_t codec_steps_ = 0;
  double kernel_wall_seconds_ = 0;
};

}  // namespace lowband::parallel
