#pragma once
// Context parallelism over P in-process ranks, for real: P model replicas (same
// seed), each sequence split over the ranks (contiguous or zigzag, positions
// global). Per layer every rank computes Q, K, V for its chunk; each K/V block
// passes through the codec once (receivers attend to its reconstruction, the
// owner to its exact block); attention runs blockwise with global offsets and is
// merged by log-sum-exp; in the backward dK/dV partials are summed per owner and
// returned through codec.backward. Weight gradients are then summed over the
// ranks in rank order (deterministic) — or, with compression.weight_sync =
// sparse, each rank steps on its own gradients and every sync_every steps a
// seeded random sync_fraction slice of each tensor is averaged (SPARTA-style).
//
// The replicas, their optimisers and the attention run on training.backend's
// kernels (kernels/backend.h: the CPU, or every replica on one CUDA GPU); the
// K/V codec runs on the host, so on a GPU each block it sees is staged through
// host memory (as are the sparse weight sync and checkpoints).
//
// Every step is recorded: compute seconds per (rank, task) — measured with a
// steady clock around the rank's kernels (after waiting for the GPU), or from
// the device profile — and the
// codec's real message bytes, laid into the step graph of
// build_context_parallel (context_schedule.h), so the recorded graph has
// exactly the schedule's tasks and dependencies.
#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend_buffer.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/model/model.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"
#include "runtime/parallel/context_schedule.h"
#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

enum class ComputeTiming { measured, profile };

// One step's recorded figures (implements the schedule's StepFigures).
struct RecordedFigures : StepFigures {
  // [rank][layer] per task tag; attention tasks also by kv owner.
  struct LayerTimes {
    double qkv = 0, mlp = 0, mlp_bwd = 0, qkv_bwd = 0;
    std::vector<double> attention, attention_bwd;  // by kv owner
  };
  struct RankTimes {
    double embed = 0, lm_head = 0, lm_head_bwd = 0, embed_bwd = 0, optimizer = 0;
    std::vector<LayerTimes> layers;
  };
  bool measured = true;  // false: compute_seconds returns -1 (device profile)
  std::vector<RankTimes> ranks;
  std::vector<std::vector<double>> kv_bytes, dkv_bytes;  // [layer][owner], one message

  void reset(int ranks, int layers);
  double compute_seconds(int rank, const char* tag, int layer, int kv_owner) const override;
  double kv_message_bytes(int layer, int owner, bool backward) const override;
};

struct StepRecord {
  int step = 0;              // 0-based index of the step taken
  double loss = 0;           // mean over every valid target token of the batch
  double lr = 0;
  double grad_norm = 0;      // global norm before clipping (rank 0's)
  bool weight_sync = true;   // whether the weights were synchronised this step
  // Per layer, relative Frobenius error of what receivers saw of K and of V in this
  // step's training forward (KvCodec::reconstruction_errors); empty unless compressing.
  std::vector<double> kv_reconstruction_error_k, kv_reconstruction_error_v;
  sim::StepGraph graph;      // empty unless recording
  double kernel_wall_seconds = 0;  // wall time of the ranks' compute, summed
  double record_wall_seconds = 0;  // wall time spent building the graph
};

class ContextTrainer {
 public:
  // Throws InputError (scenario keys) for shapes context parallelism cannot split,
  // and InputError("training.backend") for "cuda" where no GPU can be used.
  ContextTrainer(const Scenario& scenario, std::unique_ptr<compress::KvCodec> codec,
                 ComputeTiming timing = ComputeTiming::measured);

  int ranks() const { return P_; }
  // On a GPU backend its buffers are device memory (Model::params_to_host()).
  model::Model& replica(int rank) { return models_[size_t(rank)]; }
  const kernels::Backend& backend() const { return *k_; }
  compress::KvCodec& codec() { return *codec_; }
  const std::vector<TokenRange>& token_ranges(int rank) const { return ranges_[size_t(rank)]; }

  // inputs, targets: (sequences, seq_len) row-major, targets < 0 ignored.
  // Forward and backward over the ranks; afterwards every replica's grads()
  // hold its own share (dloss = valid_local / valid_global), so their sum is the
  // gradient of the global mean loss. Returns the global mean loss.
  float forward_backward(const int32_t* inputs, const int32_t* targets, int sequences);
  // Sums the replicas' gradients in rank order and gives every replica the sum.
  void all_reduce_gradients();
  // A whole training step (step counts from 0): codec.begin_step, forward_backward,
  // the weight sync, each rank's AdamW, and the recorded graph when `record`.
  StepRecord train_step(int step, const int32_t* inputs, const int32_t* targets, int sequences,
                        bool record = true);
  // Mean loss over the valid targets, forward only (the codec still applies).
  float evaluate(const int32_t* inputs, const int32_t* targets, int sequences);

  // Whether step `step` (from 0) synchronises the weights.
  bool syncs_weights(int step) const;
  const RecordedFigures& figures() const { return figures_; }

  // Everything that decides the next steps, for checkpoints (runtime/train/checkpoint.h;
  // context_trainer_state.cpp): every replica's parameters (they differ under sparse
  // weight sync), every rank's AdamW state, the codec's state and its AdamW moments.
  // The data split, the lr schedule and the sparse-sync draws are functions of the
  // scenario and the step index, so they need none. A replica or optimiser equal to
  // rank 0's bit for bit (as all-reduce keeps them) is written as a reference to it.
  // load_state expects a trainer built from the same scenario and throws
  // binary::BinaryFormatError (common/binary_io.h) for a state of another shape;
  // after such an error the trainer must not be used.
  void save_state(std::ostream& out) const;
  void load_state(std::istream& in);

 private:
  void begin(const int32_t* inputs, const int32_t* targets, int sequences);
  void forward_layer(int l);
  void backward_layer(int l);
  void sparse_sync(int step);
  float global_loss(bool backward);
  // The codec on the host, whatever the backend: GPU blocks are staged.
  double codec_forward(const compress::KvBlockId& id, int64_t n, const float* z, float* z_hat);
  double codec_backward(const compress::KvBlockId& id, int64_t n, const float* dz_hat, float* dz);
  size_t size_staging(int64_t n);  // sizes stage_in_/stage_out_ for an n-token K/V block; bytes

  Scenario scenario_;
  const kernels::Backend* k_;
  int P_, L_;
  int64_t seq_len_;
  std::vector<int64_t> local_tokens_;            // per rank, of one sequence
  std::unique_ptr<compress::KvCodec> codec_;
  std::vector<model::Model> models_;
  std::vector<optim::AdamW> optimizers_;
  optim::LrSchedule lr_;
  std::vector<std::vector<TokenRange>> ranges_;  // per rank, global ranges of one sequence
  std::vector<std::vector<int64_t>> chunk_row_;  // per rank, local row of each range's start

  int sequences_ = 0;
  std::vector<int64_t> valid_;                   // per rank: valid targets
  std::vector<std::vector<int32_t>> inputs_, targets_;
  std::vector<std::vector<int64_t>> positions_;
  // Per layer and rank, in the backend's memory: what receivers attend to (codec
  // output), the lse of each rank's merged attention (per sequence and chunk,
  // (heads, n) blocks).
  using Buffer = kernels::BackendBuffer<float>;
  std::vector<std::vector<Buffer>> k_hat_, v_hat_, lse_;
  std::vector<Buffer> dk_hat_, dv_hat_;  // per owner: sum over receivers
  Buffer tmp_out_, tmp_lse_, delta_, sum_;
  std::vector<float> stage_in_, stage_out_;  // host copies of a block for the codec
  RecordedFigures figures_;
  double kernel_seconds_ = 0;
  // Codec parameters (MoS heads) get their own AdamW moments.
  std::vector<float> codec_m_, codec_v_;
  int64_t codec_steps_ = 0;
};

}  // namespace lowband::parallel
