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
    if (quantised()) tensors_ = part.tensors();
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
  if (config.method == DataSyncMethod::diloco)
    return config.outer_gradient_bits <= 8 ? dense_packed_bytes(part.tensors(), config.outer_gradient_bits)
                                  : int64_t(sizeof(float)) * part.count();
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
  stage(params_host);
  launch(data_group, Launch::blocking, [&] {
    if (around_exchange) around_exchange(false);
  });
  if (around_exchange) around_exchange(true);
  return finish(params_host);
}

void OuterSync::stage(const float* params_host) {
  if (staged_.ready) throw std::logic_error("OuterSync::stage: the staged message was not launched");
  staged_.ready = true;
  if (dry_) return;  // the collective's size is all a dry run sends
  const int64_t n = elements_;
  std::vector<float> delta(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) delta[size_t(i)] = theta_start_[size_t(i)] - params_host[i];  // exact rounding
  if (config_.method == DataSyncMethod::diloco) {
    staged_.sent = n;
    if (quantised()) {  // the bytes sent; an eager merge also needs what they decode to
      staged_.packed = pack_dense(tensors_, config_.outer_gradient_bits, delta.data());
      if (!config_.eager) return;
      unpack_dense(tensors_, config_.outer_gradient_bits, staged_.packed.data(), int64_t(staged_.packed.size()), delta.data());
    }
    staged_.delta = std::move(delta);
    return;
  }
  const SparseMessage mine = codec_.compress(plan_, delta.data(), error_.data(), config_.error_decay);
  staged_.sent = int64_t(mine.index.size());
  staged_.packed = pack(plan_, codec_, mine);
}

void OuterSync::launch(comm::Communicator& data_group, Launch how, const std::function<void()>& before_exchange) {
  if (!staged_.ready) throw std::logic_error("OuterSync::launch: no message staged");
  if (in_flight_.started) throw std::logic_error("OuterSync::launch: the previous exchange was not merged");
  InFlight& f = in_flight_;
  f = InFlight{};
  f.started = true;
  f.replicas = data_group.size();
  f.sent = staged_.sent;
  // diloco's float32 pseudo-gradients are summed on the way; quantised ones, as
  // sparseloco's messages, all-gathered.
  const bool all_reduce = config_.method == DataSyncMethod::diloco && !quantised();
  if (!dry_) {
    f.delta = std::move(staged_.delta);
    f.packed = std::move(staged_.packed);
    if (config_.method == DataSyncMethod::diloco && config_.eager) f.own = f.delta;
    if (!all_reduce) f.gathered.assign(f.packed.size() * size_t(f.replicas), 0);
  }
  staged_ = Staged{};
  const int64_t S = dry_ ? message_bytes_ : int64_t(f.packed.size());
  comm::Wire wire = all_reduce ? comm::Wire("pseudo_grad", -1) : gather_wire(config_, S, f.replicas);
  wire.deferred = how != Launch::blocking;
  wire.background = how == Launch::background;
  if (before_exchange) before_exchange();
  if (all_reduce) {
    data_group.all_reduce_sum(dry_ ? nullptr : f.delta.data(), elements_, comm::DType::f32, wire);
    return;
  }
  data_group.all_gather(dry_ ? nullptr : f.packed.data(), dry_ ? nullptr : f.gathered.data(),
                        std::vector<int64_t>(size_t(f.replicas), S), comm::DType::u8, wire);
}

std::vector<float> OuterSync::outer_gradient() const {
  const InFlight& f = in_flight_;
  const int64_t n = elements_;
  std::vector<float> g(static_cast<size_t>(n));
  if (quantised()) {  // the decoded messages' sum in rank order, in float64
    std::vector<double> sum(static_cast<size_t>(n), 0.0);
    std::vector<float> decoded(static_cast<size_t>(n));
    const size_t S = f.packed.size();
    for (int r = 0; r < f.replicas && !f.gathered.empty(); ++r) {  // finish_first_round: no message
      unpack_dense(tensors_, config_.outer_gradient_bits, f.gathered.data() + size_t(r) * S, int64_t(S), decoded.data());
      for (size_t k = 0; k < sum.size(); ++k) sum[k] += decoded[k];
    }
    if (config_.eager && !staged_.ready) throw std::logic_error("OuterSync: an eager merge needs the next round's Δ staged");
    for (size_t k = 0; k < sum.size(); ++k)
      g[k] = float((config_.eager ? sum[k] - double(f.own[k]) + double(staged_.delta[k]) : sum[k]) / f.replicas);
    return g;
  }
  if (config_.method == DataSyncMethod::diloco) {
    if (!config_.eager) {
      for (int64_t i = 0; i < n; ++i) g[size_t(i)] = float(double(f.delta[size_t(i)]) / f.replicas);
      return g;
    }
    if (!staged_.ready) throw std::logic_error("OuterSync: an eager merge needs the next round's Δ staged");
    // The others' Δ of the round in flight and this replica's of the round just ended.
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = size_t(i);
      g[k] = float((double(f.delta[k]) - double(f.own[k]) + double(staged_.delta[k])) / f.replicas);
    }
    return g;
  }
  if (f.gathered.empty()) return g;  // finish_first_round: no message
  const int64_t S = int64_t(f.packed.size());
  std::vector<SparseMessage> messages;
  for (int r = 0; r < f.replicas; ++r) messages.push_back(unpack(plan_, codec_, f.gathered.data() + size_t(r) * S, S));
  aggregate(plan_, codec_, messages, config_.average, g.data());
  return g;
}

void OuterSync::send_result(comm::Communicator& to_late, int root) {
  InFlight& f = in_flight_;
  if (!f.started || config_.method != DataSyncMethod::diloco || config_.eager)
    throw std::logic_error("OuterSync::send_result: no diloco exchange in flight");
  // The sum (float32) or every participant's message (quantised): what the late
  // replicas' finish needs.
  if (quantised()) to_late.broadcast(f.gathered.data(), int64_t(f.gathered.size()), comm::DType::u8, root,
                                     comm::Wire("outer_result", -1));
  else to_late.broadcast(f.delta.data(), elements_, comm::DType::f32, root, comm::Wire("outer_result", -1));
}

void OuterSync::receive_result(comm::Communicator& from_root, int root, int participants) {
  if (in_flight_.started || staged_.ready || dry_ || config_.method != DataSyncMethod::diloco || config_.eager)
    throw std::logic_error("OuterSync::receive_result: not a late diloco replica between rounds");
  InFlight& f = in_flight_;
  f = InFlight{};
  f.started = true;
  f.replicas = participants;
  if (quantised()) {
    f.packed.resize(size_t(message_bytes_));
    f.gathered.resize(size_t(message_bytes_) * size_t(participants));
    from_root.broadcast(f.gathered.data(), int64_t(f.gathered.size()), comm::DType::u8, root,
                        comm::Wire("outer_result", -1));
  } else {
    f.delta.resize(size_t(elements_));
    from_root.broadcast(f.delta.data(), elements_, comm::DType::f32, root, comm::Wire("outer_result", -1));
  }
}

OuterStats OuterSync::finish_first_round(float* params_host, int replicas) {
  if (in_flight_.started) throw std::logic_error("OuterSync::finish_first_round: an exchange is in flight");
  InFlight& f = in_flight_;
  f.started = true;
  f.replicas = replicas;
  if (!dry_ && config_.method == DataSyncMethod::diloco) {
    f.delta.assign(size_t(elements_), 0.0f);
    if (config_.eager) f.own.assign(size_t(elements_), 0.0f);
  }
  return finish(params_host);
}

OuterStats OuterSync::finish(float* params_host) {
  if (!in_flight_.started) throw std::logic_error("OuterSync::finish: no exchange in flight");
  const int64_t n = elements_;
  OuterStats stats;
  stats.elements = n;
  stats.wire_bytes = double(message_bytes_);
  stats.sent = in_flight_.sent;
  stats.outer_step = ++outer_steps_;
  if (dry_) {
    in_flight_ = InFlight{};
    return stats;
  }
  const std::vector<float> g = outer_gradient();
  const bool diloco = config_.method == DataSyncMethod::diloco;
  float* momentum = diloco ? momentum_.data() : nullptr;
  const double mu = diloco ? config_.outer_momentum : 0;
  if (config_.local_weight == 0) {  // the global weights (exactly: no 0·θ_local term)
    sync::outer_step(g.data(), momentum, mu, config_.outer_lr, theta_start_.data(), params_host, n);
    theta_start_.assign(params_host, params_host + n);
  } else {
    std::vector<float> global(static_cast<size_t>(n));
    sync::outer_step(g.data(), momentum, mu, config_.outer_lr, theta_start_.data(), global.data(), n);
    const double a = config_.local_weight;
    for (int64_t i = 0; i < n; ++i)
      params_host[i] = float(a * double(params_host[i]) + (1 - a) * double(global[size_t(i)]));
    theta_start_ = std::move(global);
  }
  in_flight_ = InFlight{};
  return stats;
}

}  // namespace lowband::sync
