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
    : config_(config), elements_(part.count()), message_bytes_(0), dry_(params_host == nullptr) {
  if (config.method == DataSyncMethod::all_reduce)
    throw std::invalid_argument("OuterSync: method all_reduce has no outer step (parallel::ReplicaSync sums the "
                                "gradients every step)");
  if (config.inner_steps < 1) throw std::invalid_argument("OuterSync: inner_steps must be >= 1");
  message_bytes_ = message_bytes(config, part);
  if (dry_) return;  // no weights, no state
  theta_start_.assign(params_host, params_host + elements_);
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

int64_t OuterSync::message_bytes(const DataSyncConfig& config, const model::ParamLayout& part) {
  if (config.method == DataSyncMethod::diloco) return int64_t(sizeof(float)) * part.count();
  return packed_bytes(part.tensors(), config.chunk, {config.topk_per_chunk, config.value_bits});
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
  start_collective(data_group, params_host, /*deferred=*/false, [&] {
    if (around_exchange) around_exchange(false);
  });
  if (around_exchange) around_exchange(true);
  return finish(params_host);
}

void OuterSync::start(comm::Communicator& data_group, const float* params_host,
                      const std::function<void()>& before_exchange) {
  start_collective(data_group, params_host, /*deferred=*/true, before_exchange);
}

void OuterSync::start_collective(comm::Communicator& data_group, const float* params_host, bool deferred,
                                 const std::function<void()>& before_exchange) {
  if (pending_.started) throw std::logic_error("OuterSync::start: the previous outer step was not finished");
  const int64_t n = elements_;
  Pending& p = pending_;
  p.started = true;
  p.replicas = data_group.size();
  if (dry_) {  // the collective of the message's size, nothing computed
    if (before_exchange) before_exchange();
    if (config_.method == DataSyncMethod::diloco) {
      data_group.all_reduce_sum(nullptr, n, comm::DType::f32, comm::Wire("pseudo_grad", -1, deferred));
      return;
    }
    comm::Wire wire = gather_wire(config_, message_bytes_, p.replicas);
    wire.deferred = deferred;
    data_group.all_gather(nullptr, nullptr, std::vector<int64_t>(size_t(p.replicas), message_bytes_), comm::DType::u8,
                          wire);
    return;
  }
  p.delta.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) p.delta[size_t(i)] = theta_start_[size_t(i)] - params_host[i];  // exact rounding
  if (config_.method == DataSyncMethod::diloco) {
    p.sent = n;
    if (before_exchange) before_exchange();
    data_group.all_reduce_sum(p.delta.data(), n, comm::DType::f32, comm::Wire("pseudo_grad", -1, deferred));
    return;
  }
  const SparseMessage mine = codec_.compress(plan_, p.delta.data(), error_.data(), config_.error_decay);
  p.sent = int64_t(mine.index.size());
  p.packed = pack(plan_, codec_, mine);
  const int64_t S = int64_t(p.packed.size());
  p.gathered.assign(size_t(S) * size_t(p.replicas), 0);
  comm::Wire wire = gather_wire(config_, S, p.replicas);
  wire.deferred = deferred;
  if (before_exchange) before_exchange();
  data_group.all_gather(p.packed.data(), p.gathered.data(), std::vector<int64_t>(size_t(p.replicas), S),
                        comm::DType::u8, wire);
}

OuterStats OuterSync::finish(float* params_host) {
  if (!pending_.started) throw std::logic_error("OuterSync::finish: no outer step started");
  Pending& p = pending_;
  const int64_t n = elements_;
  OuterStats stats;
  stats.elements = n;
  stats.wire_bytes = double(message_bytes_);
  stats.sent = p.sent;
  if (dry_) {
    stats.outer_step = ++outer_steps_;
    p = Pending{};
    return stats;
  }
  std::vector<float> g(static_cast<size_t>(n));
  if (config_.method == DataSyncMethod::diloco) {
    for (int64_t i = 0; i < n; ++i) g[size_t(i)] = float(double(p.delta[size_t(i)]) / p.replicas);
    sync::outer_step(g.data(), momentum_.data(), config_.outer_momentum, config_.outer_lr, theta_start_.data(),
                     params_host, n);
  } else {
    const int64_t S = int64_t(p.packed.size());
    std::vector<SparseMessage> messages;
    for (int r = 0; r < p.replicas; ++r)
      messages.push_back(unpack(plan_, codec_, p.gathered.data() + size_t(r) * S, S));
    aggregate(plan_, codec_, messages, config_.average, g.data());
    sync::outer_step(g.data(), nullptr, 0, config_.outer_lr, theta_start_.data(), params_host, n);
  }
  theta_start_.assign(params_host, params_host + n);
  stats.outer_step = ++outer_steps_;
  p = Pending{};
  return stats;
}

}  // namespace lowband::sync
