// ReplicaSync's error-feedback variants (sync/replica_sync.h): sparse_grad, topk_grad
// and sparse_update. Sums over ranks are float32, as the gradient all-reduce's, so
// at sync_fraction 1 (topk_grad: 32-bit values) sparse_grad and topk_grad take the
// all-reduce's steps: bit for bit on two ranks, to rounding on more (the all-reduce
// adds in the ring order of an element's segment of its bucket: comm/communicator.h).
#include <algorithm>
#include <cmath>
#include <istream>
#include <ostream>

#include "common/binary_io.h"
#include "runtime/sync/host_view.h"
#include "runtime/sync/pack.h"
#include "runtime/sync/replica_sync.h"
#include "runtime/sync/sparseloco.h"

namespace lowband::sync {
namespace {

// SparseLoCo's chunk: 64 x 64 tiles of 2-D tensors, runs of 4096 otherwise.
constexpr int64_t kTopkChunk = 4096;

SparseCodec topk_codec(const Scenario& s) {
  return {topk_grad_per_chunk(s.compression.sync_fraction), s.compression.sync_value_bits};
}

}  // namespace

int topk_grad_per_chunk(double fraction) {
  return int(std::max<int64_t>(1, std::llround(fraction * double(kTopkChunk))));
}

bool ReplicaSync::sparse_gradients() const {
  const WeightSync w = s_.compression.weight_sync;
  return w == WeightSync::sparse_grad || w == WeightSync::topk_grad || w == WeightSync::lowrank_grad;
}

double weight_sync_wire_bytes(const Scenario& s, const model::ParamLayout& layout) {
  if (s.compression.weight_sync == WeightSync::topk_grad)
    return double(packed_bytes(layout.tensors(), kTopkChunk, topk_codec(s)));
  if (s.compression.weight_sync == WeightSync::lowrank_grad) {  // its two all-reduces together
    const auto [first, second] = lowrank_grad_elements(layout, s.compression.sync_fraction);
    return double(first + second) * s.model.bytes_per_element;
  }
  return double(sparse_sync_elements(layout, s.compression.sync_fraction)) * s.model.bytes_per_element;
}

void ReplicaSync::exchange_slice(comm::Communicator& comm, const model::ParamLayout& layout, int step, float* out) {
  const std::vector<int64_t> index = sparse_sync_indices(layout, s_.compression.sync_fraction, s_.training.seed, step);
  std::vector<float> sent(index.size());
  for (size_t j = 0; j < index.size(); ++j) {
    sent[j] = error_[size_t(index[j])];
    error_[size_t(index[j])] = 0.0f;
  }
  comm.all_reduce_sum(sent.data(), int64_t(sent.size()),
                      comm::Wire("grad_sync", double(sent.size()) * wire_bytes_per_element_));
  std::fill(out, out + layout.count(), 0.0f);
  for (size_t j = 0; j < index.size(); ++j) out[index[j]] += sent[j];
}

void ReplicaSync::exchange_topk(comm::Communicator& comm, const model::ParamLayout& layout, float* g_out) {
  if (plan_.chunks.empty()) plan_ = plan_chunks(layout, kTopkChunk);
  const SparseCodec codec = topk_codec(s_);
  // SparseLoCo's compressor with β = 1 and Δ = g: e <- e + g, top-k, e <- e − sent.
  const std::vector<uint8_t> packed = pack(plan_, codec, codec.compress(plan_, g_out, error_.data(), 1.0));
  const int P = comm.size();
  const int64_t S = int64_t(packed.size());
  std::vector<uint8_t> gathered(size_t(S) * size_t(P));
  comm.all_gather(packed.data(), gathered.data(), std::vector<int64_t>(size_t(P), S), comm::DType::u8,
                  comm::Wire("grad_sync", double(S) * P));
  std::fill(g_out, g_out + layout.count(), 0.0f);
  for (int r = 0; r < P; ++r)  // rank order, float32
    codec.for_each(plan_, unpack(plan_, codec, gathered.data() + size_t(r) * size_t(S), S),
                   [&](int64_t i, float v) { g_out[i] += v; });
}

void ReplicaSync::exchange_sizes(comm::Communicator& comm, const model::ParamLayout& layout) const {
  const WeightSync ws = s_.compression.weight_sync;
  const int P = comm.size();
  if (ws == WeightSync::topk_grad) {  // exchange_topk's all-gather of one packed message per rank
    const int64_t S = packed_bytes(layout.tensors(), kTopkChunk, topk_codec(s_));
    comm.all_gather(nullptr, nullptr, std::vector<int64_t>(size_t(P), S), comm::DType::u8,
                    comm::Wire("grad_sync", double(S) * P));
  } else if (ws == WeightSync::lowrank_grad) {  // exchange_lowrank's P, then Q
    const auto [first, second] = lowrank_grad_elements(layout, s_.compression.sync_fraction);
    comm.all_reduce_sum(nullptr, first, comm::DType::f32, comm::Wire("grad_sync", double(first) * wire_bytes_per_element_));
    comm.all_reduce_sum(nullptr, second, comm::DType::f32,
                        comm::Wire("grad_sync", double(second) * wire_bytes_per_element_));
  } else {  // the random slice: exchange_slice (float32), sparse_average (float64)
    const int64_t n = sparse_sync_elements(layout, s_.compression.sync_fraction);
    comm.all_reduce_sum(nullptr, n, ws == WeightSync::sparse ? comm::DType::f64 : comm::DType::f32,
                        comm::Wire("grad_sync", double(n) * wire_bytes_per_element_));
  }
}

void ReplicaSync::exchange_gradients(comm::Communicator& comm, model::Model& model, int step) {
  if (dry()) return exchange_sizes(comm, model.layout());
  const model::ParamLayout& layout = model.layout();
  const int64_t n = layout.count();
  error_.resize(size_t(n), 0.0f);
  HostView grads(k_, model.grads(), n);
  float* g = grads.get();
  if (s_.compression.weight_sync == WeightSync::topk_grad) {
    exchange_topk(comm, layout, g);
  } else if (s_.compression.weight_sync == WeightSync::lowrank_grad) {
    exchange_lowrank(comm, layout, g);
  } else {
    for (int64_t i = 0; i < n; ++i) error_[size_t(i)] += g[i];
    exchange_slice(comm, layout, step, g);
  }
  grads.put();
}

void ReplicaSync::exchange_update(comm::Communicator& comm, model::Model& model, const std::vector<float>& before,
                                  int step) {
  if (dry()) return exchange_sizes(comm, model.layout());
  const model::ParamLayout& layout = model.layout();
  const int64_t n = layout.count();
  error_.resize(size_t(n), 0.0f);
  HostView params(k_, model.params(), n);
  float* p = params.get();
  for (int64_t i = 0; i < n; ++i)  // the rank's own update, added in float64 and rounded once
    error_[size_t(i)] = float(double(error_[size_t(i)]) + (double(before[size_t(i)]) - double(p[i])));
  std::vector<float> sum(static_cast<size_t>(n));
  exchange_slice(comm, layout, step, sum.data());
  const double P = comm.size();
  for (int64_t i = 0; i < n; ++i) p[i] = float(double(before[size_t(i)]) - double(sum[size_t(i)]) / P);
  params.put();
}

void ReplicaSync::save_state(std::ostream& out) const {
  binary::write_vector(out, error_);
  binary::write_vector(out, q_);
}

void ReplicaSync::load_state(std::istream& in, const model::ParamLayout& layout) {
  const int64_t params = layout.count();
  std::vector<float> e = binary::read_vector<float>(in, "the weight sync's error buffer");
  if (!e.empty() && int64_t(e.size()) != params)
    throw binary::BinaryFormatError("an error buffer of " + std::to_string(e.size()) + " values, the model has " +
                                    std::to_string(params) + " parameters");
  std::vector<float> q = binary::read_vector<float>(in, "the weight sync's Q factors");
  const int64_t want = lowrank_grad_elements(layout, s_.compression.sync_fraction).second;
  if (!q.empty() && (s_.compression.weight_sync != WeightSync::lowrank_grad || int64_t(q.size()) != want))
    throw binary::BinaryFormatError("Q factors of " + std::to_string(q.size()) + " values where " +
                                    (s_.compression.weight_sync == WeightSync::lowrank_grad ? std::to_string(want)
                                                                                            : std::string("none")) +
                                    " were expected");
  error_ = std::move(e);
  q_ = std::move(q);
}

}  // namespace lowband::sync
