#pragma once
// The cost (FLOPs, memory bytes) of each compute task of one context-parallel
// step, from the model's shapes, and its seconds on a node's device profile: what
// the rank programs' spans charge with profile timing (context/rank.cpp,
// context/attention.cpp), in a real run and in `estimate`'s dry one (dry_steps.h).
#include <vector>

#include "runtime/cost_model.h"
#include "runtime/scenario/scenario.h"

namespace lowband::parallel {

using TokenRange = std::pair<int64_t, int64_t>;  // [begin, end) global token offsets

// The token ranges a rank holds of a seq_len-token sequence split over P ranks:
// contiguous: [r·T/P, (r+1)·T/P); zigzag: chunks r and 2P-1-r of T/(2P) tokens.
// Boundaries round down, so uneven lengths still cover [0, T) exactly once.
std::vector<TokenRange> rank_token_ranges(int64_t seq_len, int ranks, CpSplit split, int rank);

// Causal (query, key) pairs between the queries of one set of ranges and the keys
// of another (one sequence).
double causal_pairs(const std::vector<TokenRange>& queries, const std::vector<TokenRange>& keys);

// InputError naming the scenario key when one replica's context ranks cannot
// train it (pipeline or data parallelism, fewer nodes than ranks, chunks with no
// tokens, heads that do not divide).
void check_context_parallel(const Scenario& scenario);

class ContextCosts {
 public:
  explicit ContextCosts(const Scenario& scenario);

  int ranks() const { return context_ranks_; }
  const std::vector<TokenRange>& ranges(int rank) const { return ranges_[size_t(rank)]; }
  double tokens(int rank) const { return tokens_[size_t(rank)]; }       // whole batch
  // Causal (query, key) pairs of q_rank's queries and k_rank's keys, whole batch:
  // computed per call (two ranges each), so P ranks' costs hold no P x P table.
  double pairs(int q_rank, int k_rank) const {
    return double(s_.training.batch_size) * causal_pairs(ranges_[size_t(q_rank)], ranges_[size_t(k_rank)]);
  }

  cost::Cost embed(int r) const;
  cost::Cost pre_attention(int r) const;   // norm + QKV
  cost::Cost post_attention(int r) const;  // out proj + norm + MLP
  cost::Cost head(int r) const;            // final norm + LM head
  cost::Cost attention(int q, int k, bool backward) const;
  // Of layer `layer`: zero unless compression.method = mos and the layer compresses
  // (CompressionConfig::kv_layer_compressed: not the final one by default).
  cost::Cost mos_project(int layer, int owner) const;
  cost::Cost mos_reconstruct(int layer, int owner) const;
  cost::Cost optimizer() const;

  // Forward + backward (3 x forward, no recompute) of one step, all ranks: the
  // attention blocks a causal mask leaves something in.
  double step_model_flops() const;
  // What one step's "kv" and "dkv" messages carry uncompressed, all ranks: each
  // owner's blocks reach the P − 1 others once (ring or all-gather) and their
  // gradients return as much, in every layer.
  double uncompressed_kv_bytes() const;

  // Seconds of `c` on `rank`'s node; InputError("devices") when the profile gives
  // no finite time (`tag` names the task).
  double seconds(int rank, const cost::Cost& c, const char* tag) const;

 private:
  const Scenario& s_;
  int context_ranks_;
  double elem_;
  int k_rank_ = 0, v_rank_ = 0;
  bool mos_layer(int layer) const;
  std::vector<std::vector<TokenRange>> ranges_;
  std::vector<double> tokens_;
};

}  // namespace lowband::parallel
