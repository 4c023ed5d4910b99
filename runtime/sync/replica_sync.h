#pragma once
// Weight synchronisation inside a replica (compression.weight_sync), across the
// ranks of a context group or of synchronous data parallelism: what keeps (or
// lets drift, and pulls back) the ranks' copies of the weights. (Across
// replicas that train on their own for H steps, parallel.data_sync diloco and
// sparseloco: outer_sync.h.) A rank program calls all_reduce_bucket in its
// backward and before_optimizer / after_optimizer around its optimiser step.
//  - all_reduce: every step, the gradients summed over the ranks in buckets as
//    the backward produces them (head, each layer from the last, embedding), like
//    DDP; the buckets are deferred collectives, so the recorded graph lets the
//    backward overlap them, and the optimiser waits for all.
//  - sparse (SPARTA-style): each rank steps on its own gradients; every
//    sync_every steps a seeded random sync_fraction slice of each tensor is
//    averaged (a float64 all-reduce, comm/communicator.h's order, divided by the rank count).
//  - sparse_grad, topk_grad, sparse_update (error feedback, sync/replica_sync_sparse.cpp):
//    each rank adds what it would send to an error buffer e, sends a sparse
//    part of e and keeps the rest (e after = e before + x − x̂, elementwise);
//    every rank applies the same aggregate, so the weights stay bit-identical.
//      sparse_grad:   x = the rank's share of the gradient; a seeded random
//                     sync_fraction of each tensor (the same on every rank: no
//                     indices), all-reduced; AdamW steps on the summed slice.
//      topk_grad:     x as sparse_grad; per chunk the k = sync_fraction·4096
//                     entries of largest |e| (SparseLoCo's chunks, bins and
//                     12-bit indices: runtime/sync), all-gathered; AdamW steps
//                     on their rank-order sum.
//      sparse_update: x = the rank's own AdamW update (own gradient, own
//                     moments); the random slice as sparse_grad, averaged.
//      lowrank_grad:  x as sparse_grad; PowerSGD's rank-r factors of each
//                     matrix (sync/replica_sync_lowrank.cpp), two all-reduces.
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "kernels/backend.h"
#include "runtime/model/model.h"
#include "runtime/scenario/scenario.h"
#include "runtime/sync/chunks.h"
#include "runtime/sync/host_view.h"

namespace lowband::sync {

// [begin, end) element ranges of the flat gradient buffer in the order the
// backward finishes them: head (final norm, LM head unless tied), layers L-1..0,
// embedding (with the tied head's share); of a pipeline stage's layout, those it holds.
struct GradBucket {
  int64_t begin = 0, end = 0;
  int layer = -1;  // -1: head or embedding
};
std::vector<GradBucket> gradient_buckets(const model::ParamLayout& layout);

// Elements the sparse sync averages per sync: max(1, round(fraction · count)) per
// tensor (draws may repeat an element; it is sent once per draw).
int64_t sparse_sync_elements(const model::ParamLayout& layout, double fraction);

// The flat parameter indices of step `step`'s random slice, the same on every
// rank (seed, step, tensor): sparse_sync_elements of them, tensor by tensor.
std::vector<int64_t> sparse_sync_indices(const model::ParamLayout& layout, double fraction, uint64_t seed,
                                         int step);

// topk_grad's entries kept per chunk: max(1, round(fraction · 4096)).
int topk_grad_per_chunk(double fraction);

// The sparse syncs' bytes per rank per sync: sparse, sparse_grad, sparse_update
// all-reduce sparse_sync_elements values at model.bytes_per_element; topk_grad
// all-gathers one packed SparseLoCo message per rank (packed_bytes), this.
double weight_sync_wire_bytes(const Scenario& s, const model::ParamLayout& layout);

// lowrank_grad's rank of a matrix tensor (n x m): round(fraction · n·m / (n + m)),
// in 1..min(n, m), so its two factors hold about fraction of its elements.
int64_t lowrank_grad_rank(const model::TensorInfo& t, double fraction);
// The values lowrank_grad all-reduces per step: first P (n·r per matrix) and the
// vectors whole, then Q (m·r per matrix).
std::pair<int64_t, int64_t> lowrank_grad_elements(const model::ParamLayout& layout, double fraction);

class ReplicaSync {
 public:
  ReplicaSync(const Scenario& scenario, const kernels::Backend& k);

  // Whether the backward sums the gradients over the ranks (all_reduce).
  bool sums_gradients() const { return s_.compression.weight_sync == WeightSync::all_reduce; }
  // sparse_grad / topk_grad: exchange_gradients before the optimiser step.
  bool sparse_gradients() const;
  // sparse_update: exchange_update after each rank's own optimiser step.
  bool sparse_updates() const { return s_.compression.weight_sync == WeightSync::sparse_update; }
  // Whether it keeps an error buffer (checkpointed: save_state / load_state).
  bool error_feedback() const { return sparse_gradients() || sparse_updates(); }
  // Whether every rank steps on the same gradients after before_optimizer (all
  // but sparse and sparse_update, whose ranks step on their own and whose
  // after_optimizer then moves the weights).
  bool same_gradients() const { return sums_gradients() || sparse_gradients(); }
  // Whether step `step` (from 0) synchronises the weights.
  bool syncs_at(int step) const;
  // all_reduce: starts summing bucket `b` of the rank's gradients over `comm`
  // (in place; a deferred collective): the bucket's gradients are the sum only
  // after join_buckets.
  void all_reduce_bucket(comm::Communicator& comm, model::Model& model, const GradBucket& b);
  // Waits for the buckets started (comm.wait_deferred: every communicator of the
  // rank) and puts a device's staged copies back.
  void join_buckets(comm::Communicator& comm);

  // The two points around the optimiser step where a weight sync acts, which a
  // rank program calls whatever the method (each does nothing where its method
  // has nothing to do there), so that no program names a method:
  //  before_optimizer: sparse, sparse_update step on the rank's own gradient, so
  //    it is rescaled from the share of the group's mean loss to the rank's own
  //    mean (valid_global / valid_rank tokens); sparse_grad, topk_grad,
  //    lowrank_grad exchange it (exchange_gradients); sparse_update keeps the
  //    weights the update is measured from.
  //  after_optimizer: sparse averages step `step`'s slice on its sync steps;
  //    sparse_update exchanges the update (exchange_update).
  void before_optimizer(comm::Communicator& comm, model::Model& model, int step, int64_t valid_rank,
                        int64_t valid_global);
  void after_optimizer(comm::Communicator& comm, model::Model& model, int step);

  // sparse_grad / topk_grad: e <- e + grads; grads <- the aggregate over `comm`
  // of what the ranks sent of e (0 where nothing was); e keeps the rest.
  void exchange_gradients(comm::Communicator& comm, model::Model& model, int step);

  // The error buffer (empty before the first exchange: all zero).
  const std::vector<float>& error() const { return error_; }
  void save_state(std::ostream& out) const;
  // binary::BinaryFormatError for a buffer of another size than `layout`'s (the
  // rank's model's: a pipeline stage's holds only its layers).
  void load_state(std::istream& in, const model::ParamLayout& layout);

 private:
  // sparse: averages step `step`'s random slice of the parameters over `comm`.
  void sparse_average(comm::Communicator& comm, model::Model& model, int step) const;
  // sparse_update: `before` is the host copy of the parameters before this
  // rank's own optimiser step; e <- e + (before − params); params <- before −
  // the mean over `comm` of what the ranks sent of e; e keeps the rest.
  void exchange_update(comm::Communicator& comm, model::Model& model, const std::vector<float>& before, int step);
  // The random slice of e: sent[j] <- e[index[j]], e[index[j]] <- 0 (a repeated
  // draw sends 0); after the all-reduce, out[index[j]] += sent[j] (out zeroed).
  void exchange_slice(comm::Communicator& comm, const model::ParamLayout& layout, int step, float* out);
  // topk_grad: e <- e + g_out (SparseLoCo's compressor, β = 1), then g_out <- the
  // rank-order sum of the ranks' top-k messages.
  void exchange_topk(comm::Communicator& comm, const model::ParamLayout& layout, float* g_out);
  // lowrank_grad: e <- e + g, then g <- P Qᵀ (sync/replica_sync_lowrank.cpp).
  void exchange_lowrank(comm::Communicator& comm, const model::ParamLayout& layout, float* g);
  // The dry mode of the three above (kernels::Device::dry: no values): the
  // collectives they call, of their sizes, and nothing drawn, kept or computed.
  void exchange_sizes(comm::Communicator& comm, const model::ParamLayout& layout) const;
  bool dry() const { return k_.device == kernels::Device::dry; }

  const Scenario& s_;
  const kernels::Backend& k_;
  bool sparse_;
  double wire_bytes_per_element_;
  std::vector<float> error_;
  std::vector<float> before_;  // sparse_update: the weights before this step's own optimiser step
  std::vector<float> q_;  // lowrank_grad: the Q factors, the same on every rank (empty: not yet drawn)
  ChunkPlan plan_;  // topk_grad's chunks (planned on first use)
  std::deque<HostView> buckets_in_flight_;  // all_reduce_bucket's host copies, until join_buckets
};

}  // namespace lowband::sync
