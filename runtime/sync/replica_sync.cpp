#include "runtime/sync/replica_sync.h"

#include <algorithm>
#include <cmath>

#include "runtime/sync/host_view.h"
#include "runtime/sync/sync_period.h"

namespace lowband::sync {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<GradBucket> gradient_buckets(const model::ParamLayout& layout) {
  // Memory order: embedding, layers first to last, final norm and LM head; a
  // pipeline stage's layout holds only some of them.
  const int first = layout.first_layer(), end = layout.end_layer();
  const int64_t head = layout.final_norm() >= 0 ? layout.final_norm() : layout.count();
  std::vector<GradBucket> out;
  if (head < layout.count()) out.push_back({head, layout.count(), -1});
  for (int l = end - 1; l >= first; --l)
    out.push_back({layout.layer(l).attn_norm, l + 1 < end ? layout.layer(l + 1).attn_norm : head, l});
  if (layout.embedding() >= 0)
    out.push_back({layout.embedding(), first < end ? layout.layer(first).attn_norm : head, -1});
  return out;
}

int64_t sparse_sync_elements(const model::ParamLayout& layout, double fraction) {
  int64_t n = 0;
  for (const auto& t : layout.tensors())
    n += std::min(t.count(), std::max<int64_t>(1, int64_t(std::llround(fraction * double(t.count())))));
  return n;
}

std::vector<int64_t> sparse_sync_indices(const model::ParamLayout& layout, double fraction, uint64_t seed,
                                         int step) {
  const auto& tensors = layout.tensors();
  std::vector<int64_t> index;
  for (size_t ti = 0; ti < tensors.size(); ++ti) {
    const int64_t count = tensors[ti].count();
    const int64_t picks = std::max<int64_t>(1, int64_t(std::llround(fraction * double(count))));
    uint64_t state = splitmix64(seed ^ (uint64_t(step) << 20) ^ ti);
    const bool all = picks >= count;  // fraction 1: every element, no draws
    for (int64_t j = 0; j < (all ? count : picks); ++j) {
      state = splitmix64(state);
      index.push_back(tensors[ti].offset + (all ? j : int64_t(state % uint64_t(count))));
    }
  }
  return index;
}

ReplicaSync::ReplicaSync(const Scenario& s, const kernels::Backend& k)
    : s_(s), k_(k), sparse_(s.compression.weight_sync == lowband::WeightSync::sparse),
      wire_bytes_per_element_(s.model.bytes_per_element) {}

bool ReplicaSync::syncs_at(int step) const { return sync::syncs_at(weight_sync_period_steps(s_), step); }

void ReplicaSync::all_reduce_bucket(comm::Communicator& comm, model::Model& model, const GradBucket& b) {
  const int64_t count = b.end - b.begin;
  if (count <= 0 || comm.size() < 2) return;
  const comm::Wire wire("grad_sync", double(count) * wire_bytes_per_element_, /*deferred=*/true);
  HostView& grads = buckets_in_flight_.emplace_back(k_, model.grads() + b.begin, count);
  comm.all_reduce_sum(grads.get(), count, wire);
}

void ReplicaSync::join_buckets(comm::Communicator& comm) {
  comm.wait_deferred();
  for (HostView& grads : buckets_in_flight_) grads.put();
  buckets_in_flight_.clear();
}

void ReplicaSync::before_optimizer(comm::Communicator& comm, model::Model& model, int step, int64_t valid_rank,
                                   int64_t valid_global) {
  if ((sparse_ || sparse_updates()) && valid_rank > 0)
    k_.scale_inplace(model.grads(), float(double(valid_global) / double(valid_rank)), model.param_count());
  if (sparse_gradients()) exchange_gradients(comm, model, step);
  if (sparse_updates()) before_ = model.params_to_host();
}

void ReplicaSync::after_optimizer(comm::Communicator& comm, model::Model& model, int step) {
  if (sparse_ && syncs_at(step)) sparse_average(comm, model, step);
  if (sparse_updates()) exchange_update(comm, model, before_, step);
}

void ReplicaSync::sparse_average(comm::Communicator& comm, model::Model& model, int step) const {
  const int P = comm.size();
  if (P < 2) return;
  if (dry()) return exchange_sizes(comm, model.layout());
  HostView view(k_, model.params(), model.layout().count());
  float* params = view.get();
  // The same draws on every rank: the slice is never sent.
  const std::vector<int64_t> index =
      sparse_sync_indices(model.layout(), s_.compression.sync_fraction, s_.training.seed, step);
  std::vector<double> sum(index.size());
  for (size_t j = 0; j < index.size(); ++j) sum[j] = params[index[j]];
  comm.all_reduce_sum(sum.data(), int64_t(sum.size()),
                      comm::Wire("grad_sync", double(sum.size()) * wire_bytes_per_element_));
  for (size_t j = 0; j < index.size(); ++j) params[index[j]] = float(sum[j] / P);
  view.put();
}

}  // namespace lowband::sync
