#include "runtime/sync/outer_sync.h"

#include <stdexcept>

#include "runtime/sync/aggregate.h"
#include "runtime/sync/outer_optimizer.h"
#include "runtime/sync/pack.h"

namespace lowband::sync {

namespace {

// SparseLoCo's all-gather of S-byte messages over `replicas`: "pseudo_grad", through
// the relay node where data_sync.exchange says so (the traffic only: the gather is the same).
comm::Wire gather_wire(const DataSyncConfig& config, int64_t S, int replicas) {
  comm::Wire wire("pseudo_grad", double(S) * replicas);
  wire.relay = config.exchange == DataSyncExchange::relay;
  return wire;
}

}  // namespace

OuterSync::OuterSync(const DataSyncConfig& config, const model::ParamLayout& part, const float* params_host)
    : config_(config), elements_(part.count()), theta_start_(params_host, params_host + part.count()) {
  if (config.method == DataSyncMethod::all_reduce)
    throw std::invalid_argument("OuterSync: method all_reduce has no outer step (parallel::ReplicaSync sums the "
                                "gradients every step)");
  if (config.inner_steps < 1) throw std::invalid_argument("OuterSync: inner_steps must be >= 1");
  if (config.method == DataSyncMethod::diloco) {
    momentum_.assign(size_t(elements_), 0.0f);
    return;
  }
  plan_ = plan_chunks(part, config.chunk);
  if (plan_.elements != elements_)
    throw std::invalid_argument("OuterSync: the layout's tensors cover " + std::to_string(plan_.elements) + " of " +
                                std::to_string(elements_) + " parameters");
  codec_ = {config.topk_per_chunk, config.value_bits};
  error_.assign(size_t(elements_), 0.0f);
}

int64_t OuterSync::message_bytes() const {
  return config_.method == DataSyncMethod::diloco ? int64_t(sizeof(float)) * elements_ : packed_bytes(plan_, codec_);
}

void OuterSync::exchange_sizes(comm::Communicator& data_group, const DataSyncConfig& config,
                               const model::ParamLayout& part) {
  const int replicas = data_group.size();
  if (config.method == DataSyncMethod::diloco) {
    data_group.all_reduce_sum(nullptr, part.count(), comm::DType::f32, comm::Wire("pseudo_grad"));
    return;
  }
  const int64_t S = packed_bytes(part.tensors(), config.chunk, {config.topk_per_chunk, config.value_bits});
  data_group.all_gather(nullptr, nullptr, std::vector<int64_t>(size_t(replicas), S), comm::DType::u8,
                        gather_wire(config, S, replicas));
}

// Passes over the part's float32 values, each read or written once: the sync is
// memory-bound (a few operations per element).
cost::Cost OuterSync::before_exchange_cost(const DataSyncConfig& config, int64_t elements) {
  const double n = double(elements);
  // Δ = θ_start − θ (2 reads, 1 write); sparseloco also e ← βe + Δ (2 reads, 1
  // write), each chunk's top-k of |e| (1 read) and e's kept part (1 write).
  const double passes = config.method == DataSyncMethod::diloco ? 3 : 7;
  return {passes * n, passes * 4 * n};
}

cost::Cost OuterSync::after_exchange_cost(const DataSyncConfig& config, int64_t elements) {
  const double n = double(elements);
  // diloco: g = sum / R, then the Nesterov step (g, momentum, θ_start, θ: 3
  // reads, 2 writes); sparseloco: g zeroed and the messages' few entries added
  // into it, the plain step (2 reads, 1 write); then θ_start ← θ (1 read, 1 write).
  const double passes = config.method == DataSyncMethod::diloco ? 2 + 5 + 2 : 1 + 3 + 2;
  return {passes * n, passes * 4 * n};
}

OuterStats OuterSync::outer_step(comm::Communicator& data_group, float* params_host,
                                 const std::function<void(bool after)>& around_exchange) {
  const auto mark = [&](bool after) {
    if (around_exchange) around_exchange(after);
  };
  const int64_t n = elements_;
  const int replicas = data_group.size();
  std::vector<float> delta(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) delta[size_t(i)] = theta_start_[size_t(i)] - params_host[i];  // exact rounding
  OuterStats stats;
  stats.elements = n;
  stats.wire_bytes = double(message_bytes());
  std::vector<float> g(static_cast<size_t>(n));
  if (config_.method == DataSyncMethod::diloco) {
    mark(false);
    data_group.all_reduce_sum(delta.data(), n, comm::Wire("pseudo_grad"));
    mark(true);
    for (int64_t i = 0; i < n; ++i) g[size_t(i)] = float(double(delta[size_t(i)]) / replicas);
    sync::outer_step(g.data(), momentum_.data(), config_.outer_momentum, config_.outer_lr, theta_start_.data(),
                     params_host, n);
    stats.sent = n;
  } else {
    const SparseMessage mine = codec_.compress(plan_, delta.data(), error_.data(), config_.error_decay);
    const std::vector<uint8_t> packed = pack(plan_, codec_, mine);
    const int64_t S = int64_t(packed.size());
    std::vector<uint8_t> gathered(size_t(S) * size_t(replicas));
    mark(false);
    data_group.all_gather(packed.data(), gathered.data(), std::vector<int64_t>(size_t(replicas), S), comm::DType::u8,
                          gather_wire(config_, S, replicas));
    mark(true);
    std::vector<SparseMessage> messages;
    for (int r = 0; r < replicas; ++r) messages.push_back(unpack(plan_, codec_, gathered.data() + size_t(r) * S, S));
    aggregate(plan_, codec_, messages, config_.average, g.data());
    sync::outer_step(g.data(), nullptr, 0, config_.outer_lr, theta_start_.data(), params_host, n);
    stats.sent = int64_t(mine.index.size());
  }
  theta_start_.assign(params_host, params_host + n);
  stats.outer_step = ++outer_steps_;
  return stats;
}

}  // namespace lowband::sync
