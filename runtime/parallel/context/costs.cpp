#include "runtime/parallel/context/costs.h"

#include "common/error.h"

#include "runtime/compress/identity_codec.h"

namespace lowband::parallel {

std::vector<TokenRange> rank_token_ranges(int64_t seq_len, int ranks, CpSplit split, int rank) {
  if (split == CpSplit::contiguous)
    return {{rank * seq_len / ranks, (rank + 1) * seq_len / ranks}};
  const int64_t chunks = 2LL * ranks;
  auto chunk = [&](int64_t c) { return TokenRange{c * seq_len / chunks, (c + 1) * seq_len / chunks}; };
  return {chunk(rank), chunk(chunks - 1 - rank)};
}

double causal_pairs(const std::vector<TokenRange>& queries, const std::vector<TokenRange>& keys) {
  double pairs = 0;
  for (const auto& q : queries)
    for (const auto& k : keys) pairs += cost::causal_pairs(q.first, q.second, k.first, k.second);
  return pairs;
}

ContextCosts::ContextCosts(const Scenario& s)
    : s_(s), context_ranks_(s.parallel.context), elem_(cost::dtype_bytes(s.devices.dtype)) {
  const auto& m = s.model;
  if (s.compression.method == CompressionMethod::mos) {
    k_rank_ = s.compression.k_rank(m.head_dim());
    v_rank_ = s.compression.v_rank(m.head_dim());
  }
  const double batch = s.training.batch_size;
  for (int r = 0; r < context_ranks_; ++r) {
    ranges_.push_back(rank_token_ranges(m.seq_len, context_ranks_, s.parallel.split, r));
    double n = 0;
    for (const auto& rg : ranges_.back()) n += double(rg.second - rg.first);
    tokens_.push_back(n * batch);
  }
}

cost::Cost ContextCosts::embed(int r) const { return cost::embedding_forward(s_.model, tokens(r), elem_); }

cost::Cost ContextCosts::pre_attention(int r) const { return cost::pre_attention_forward(s_.model, tokens(r), elem_); }

cost::Cost ContextCosts::post_attention(int r) const {
  return cost::post_attention_forward(s_.model, tokens(r), elem_);
}

cost::Cost ContextCosts::head(int r) const { return cost::head_forward(s_.model, tokens(r), elem_); }

cost::Cost ContextCosts::attention(int q, int k, bool backward) const {
  return backward ? cost::attention_backward(s_.model, pairs(q, k), tokens(q), tokens(k), elem_)
                  : cost::attention_forward(s_.model, pairs(q, k), tokens(q), tokens(k), elem_);
}

bool ContextCosts::mos_layer(int layer) const {
  return k_rank_ + v_rank_ > 0 && s_.compression.kv_layer_compressed(layer, s_.model.layers);
}

cost::Cost ContextCosts::mos_project(int layer, int owner) const {
  return mos_layer(layer) ? cost::mos_project(s_.model, k_rank_, v_rank_, tokens(owner), elem_) : cost::Cost{};
}

cost::Cost ContextCosts::mos_reconstruct(int layer, int owner) const {
  return mos_layer(layer) ? cost::mos_reconstruct(s_.model, k_rank_, v_rank_, tokens(owner), elem_) : cost::Cost{};
}

cost::Cost ContextCosts::optimizer() const { return cost::adamw_step(s_.model.parameters()); }

double ContextCosts::step_model_flops() const {
  double forward = 0;
  for (int c = 0; c < context_ranks_; ++c) {
    double layer = pre_attention(c).flops + post_attention(c).flops;
    for (int o = 0; o < context_ranks_; ++o)
      if (o == c || pairs(c, o) > 0) layer += attention(c, o, false).flops;
    forward += s_.model.layers * layer + head(c).flops;
  }
  return 3.0 * forward;
}

double ContextCosts::uncompressed_kv_bytes() const {
  const auto& m = s_.model;
  const compress::IdentityCodec plain(m.kv_heads, m.head_dim(), m.bytes_per_element);
  double per_layer = 0;
  for (int o = 0; o < context_ranks_; ++o) {
    double block = 0;  // one sequence's K and V blocks of owner o
    for (const TokenRange& rg : ranges(o))
      for (auto t : {compress::KvTensor::k, compress::KvTensor::v}) block += plain.message_bytes(t, rg.second - rg.first);
    per_layer += 2.0 * (context_ranks_ - 1) * (double(s_.training.batch_size) * block);
  }
  return per_layer * m.layers;
}

double ContextCosts::seconds(int rank, const cost::Cost& c, const char* tag) const {
  return cost::node_seconds(s_, s_.parallel.node_of(rank), c, tag);
}

void check_context_parallel(const Scenario& s) {
  const auto& m = s.model;
  const int P = s.parallel.context;
  if (P < 1) throw InputError("parallel.context", "must be at least 1");
  if (s.parallel.pipeline != 1)
    throw InputError("parallel.pipeline", "a context-parallel replica has one stage (expected 1)");
  if (s.parallel.data != 1)
    throw InputError("parallel.data", "a context-parallel replica has one stage (expected 1)");
  if (m.layers < 1) throw InputError("model.layers", "must be at least 1");
  if (m.heads < 1 || m.d_model % m.heads != 0)
    throw InputError("model.heads", "must divide model.d_model");
  if (m.kv_heads < 1 || m.heads % m.kv_heads != 0)
    throw InputError("model.kv_heads", "must divide model.heads");
  const int64_t chunks = s.parallel.split == CpSplit::zigzag ? 2LL * P : P;
  if (m.seq_len < chunks)
    throw InputError("model.seq_len", "fewer tokens (" + std::to_string(m.seq_len) + ") than the " +
                                          std::to_string(chunks) + " context-parallel chunks");
  if (s.network.nodes < P)
    throw InputError("network.nodes", std::to_string(s.network.nodes) + " nodes for " +
                                          std::to_string(P) + " context-parallel ranks");
  if (s.training.batch_size < 1) throw InputError("training.batch_size", "must be at least 1");
}

}  // namespace lowband::parallel
