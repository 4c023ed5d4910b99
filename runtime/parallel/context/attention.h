#pragma once
// The context-parallel part of one rank (SPMD): its share of each sequence,
// and attention over the whole sequence through the K/V exchange with the other
// ranks of its context group, layer by layer. Both rank programs use it: a
// context-parallel replica (context/rank.h: every layer) and a pipeline stage
// with context parallelism inside (pipeline/rank.h: the stage's layers, one
// microbatch per slot).
//
// Each sequence is split over the P ranks (contiguous or zigzag; positions are
// global). Per layer a rank computes Q, K, V for its chunk and encodes its K/V
// blocks into one message; the exchange sends it around a ring (each rank
// forwards what it received last round) or straight to every other rank
// (all_gather). The rank attends to its own block first — exact, or with
// compression.owner_kv reconstructed the codec's reconstruction of it, decoded
// from the message it sends, so every rank attends to the same K̂/V̂ — then to
// each decoded block as it arrives, merging by log-sum-exp. In the backward it
// computes dK/dV for every block it attended to, encodes the gradient for each
// remote owner and sends it back: ring — one accumulator per owner passed
// along, each rank adding its part; all_gather — straight to the owner, who
// sums the partials in rank order. The codec's own collectives go over the same
// group: its parameter gradients ("codec_grad") and its warm-up Gram sums
// ("codec_fit"); its error sums ride on the loss's all-reduce ("loss").
//
// Compute spans are logged under "qkv", "attention" (per block), "mlp", and the
// same with "_bwd".
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "kernels/backend_buffer.h"
#include "runtime/compress/kv_codec.h"
#include "runtime/model/model.h"
#include "runtime/parallel/compute_span.h"
#include "runtime/parallel/context/costs.h"
#include "runtime/scenario/scenario.h"

namespace lowband::parallel {

class ContextAttention {
 public:
  // rank: this rank's index in its context group. costs: of the batch one slot
  // holds (a pipeline's microbatch); they must outlive this object, as must the
  // model and the spans' sink.
  ContextAttention(const Scenario& scenario, int rank, std::unique_ptr<compress::KvCodec> codec,
                   model::Model& model, const ContextCosts& costs, const SpanSink& spans);

  int rank() const { return rank_; }
  int ranks() const { return context_ranks_; }
  compress::KvCodec& codec() { return *codec_; }
  const compress::KvCodec& codec() const { return *codec_; }

  // Slot `slot`'s own K̂/V̂ and softmax statistics (a microbatch in flight); the
  // caller switches the model's slot alongside.
  void use_slot(int slot);
  // This rank's rows of `sequences` whole sequences (row-major, seq_len each;
  // targets may be null): the batch to begin the model with. first_sequence: the
  // first one's index in the step's batch (it names the codec's blocks).
  model::TokenBatch gather(const int32_t* inputs, const int32_t* targets, int sequences, int first_sequence);
  int64_t valid() const { return slot_->valid; }  // targets >= 0 among the current slot's rows
  // What this rank attended to of `owner`'s block in layer l (current slot;
  // (rows(owner), kv_heads, head_dim), device memory on a GPU): a receiver's
  // decoded K̂ (V̂), or the owner's own reconstruction with owner_kv
  // reconstructed; null for the owner's exact K/V.
  const float* attended_kv(int l, compress::KvTensor t, int owner) const;
  int64_t rows(int owner) const;            // the current slot's rows of `owner`
  int64_t tokens_per_sequence(int owner) const { return local_tokens_[size_t(owner)]; }

  // Layer l (global) through the exchange over `group` (this rank's context group).
  void forward_layer(comm::Communicator& group, int l);
  void backward_layer(comm::Communicator& group, int l);
  // The same layer in two halves, so that other slots' work can run while this
  // slot's messages cross the links (several sequences in flight, context/rank.h):
  // forward: _send computes Q/K/V and sends this rank's blocks, _finish receives
  // the others' and attends, then the MLP; backward: _send runs the MLP and the
  // attention backward and sends each owner its dK/dV, _finish receives this
  // rank's own and runs the Q/K/V backward. Each slot's messages have tags of
  // their own, so the halves of several slots may interleave in any order the
  // group's ranks share.
  void forward_layer_send(comm::Communicator& group, int l);
  void forward_layer_finish(comm::Communicator& group, int l);
  void backward_layer_send(comm::Communicator& group, int l);
  void backward_layer_finish(comm::Communicator& group, int l);

  // The codec's collectives, once per step: begin_step (after the warm-up every
  // rank's Gram sums, summed); the codec's AdamW step on its parameter gradients
  // summed over the group.
  void begin_codec_step(comm::Communicator& group, int step);
  void step_codec(comm::Communicator& group, double lr);
  // The codec's error sums of this step's forward (per layer, K and V: ‖Z − Ẑ‖²
  // and ‖Z‖²; none unless it compresses over several ranks), a diagnostic: they
  // ride on a message the step sends anyway (the loss's all-reduce) rather than
  // a collective of their own on the critical path. append_error_sums adds them
  // to that message, take_error_sums reads them back summed (`summed`: where
  // they were appended), reconstruction_errors gives the figures per layer.
  void append_error_sums(std::vector<double>& message);
  void take_error_sums(const double* summed);
  void reconstruction_errors(std::vector<double>& k, std::vector<double>& v) const;
  // The codec's state and its AdamW moments (checkpoints).
  void save_codec_state(std::ostream& out) const;
  void load_codec_state(std::istream& in);  // binary::BinaryFormatError on a mismatch

 private:
  using Buffer = kernels::BackendBuffer<float>;
  struct Slot {
    int sequences = 0, first_sequence = 0;
    int64_t valid = 0;  // targets >= 0 among its rows
    // [layer - first layer][owner]: the decoded K/V of remote owners.
    std::vector<std::vector<Buffer>> k_hat, v_hat;
    std::vector<Buffer> lse;  // [layer - first layer]: (rows, heads) of the merged attention
    // compression.owner_kv reconstructed: the owner's gradient of its own blocks,
    // encoded as a receiver's, from backward_layer_send to _finish.
    std::vector<compress::CodecGradient> own_gradient;
  };

  void attend(int l, int owner, bool backward, float* dk, float* dv);
  void encode_blocks(int l, std::vector<uint8_t>& message);
  void decode_blocks(int l, int owner, const std::vector<uint8_t>& message);
  void encode_gradients(int l, int owner, const float* dk, const float* dv,
                        std::vector<compress::CodecGradient>& out);
  void decode_gradients(int l, const std::vector<compress::CodecGradient>& summed);
  // What `src` sends of `owner`'s K/V blocks (the gradients of `owner`'s blocks) in layer l.
  void receive_blocks(comm::Communicator& comm, int src, int l, int owner, std::vector<uint8_t>& message);
  void receive_gradients(comm::Communicator& comm, int src, int l, int owner,
                         std::vector<compress::CodecGradient>& blocks);
  // One tag per slot, layer and direction (slot 0's: 2·layer and 2·layer + 1).
  int tag_kv(int layer) const { return 2 * (slot_index_ * scenario_.model.layers + layer); }
  int tag_dkv(int layer) const { return tag_kv(layer) + 1; }
  int owner_at(int k) const { return ((rank_ - k) % context_ranks_ + context_ranks_) % context_ranks_; }
  size_t layer_index(int l) const { return size_t(l - first_layer_); }
  compress::KvBlockId block_id(int l, compress::KvTensor t, int owner, int chunk, int sequence) const;
  template <class F> void for_each_block(int l, int owner, F f) const;
  size_t block_count(int owner) const;  // K and V blocks of owner's chunks over the slot's sequences

  const Scenario& scenario_;
  int rank_, context_ranks_, first_layer_, layers_;
  int64_t seq_len_, kv_row_;
  std::unique_ptr<compress::KvCodec> codec_;
  model::Model& model_;
  const kernels::Backend& k_;
  const ContextCosts& costs_;
  const SpanSink& spans_;
  std::vector<std::vector<TokenRange>> ranges_;       // per rank
  std::vector<std::vector<int64_t>> chunk_row_;       // per rank: local row of each range's start
  // 0, 1, ..., seq_len − 1: a chunk's global positions are a run of it. One
  // array for every rank of the process (512 ranks of 128k tokens held 512 MB).
  std::shared_ptr<const std::vector<int64_t>> global_positions_;
  std::vector<int64_t> local_tokens_;                 // per rank, of one sequence

  std::vector<Slot> slots_;
  Slot* slot_ = nullptr;
  int slot_index_ = 0;
  std::vector<int32_t> inputs_, targets_;
  std::vector<int64_t> positions_;
  std::vector<char> started_;  // per (sequence, query chunk): output written this layer
  bool owner_reconstructs_ = false;  // compression.owner_kv reconstructed (and a codec, and P > 1)
  Buffer tmp_out_, tmp_lse_, delta_, dk_part_, dv_part_, own_dk_, own_dv_;
  std::vector<float> host_a_, host_b_;  // staging for the codec on a GPU backend
  std::vector<uint8_t> received_;       // the last dK/dV message received
  std::vector<float> codec_m_, codec_v_;
  int64_t codec_steps_ = 0;
};

}  // namespace lowband::parallel
