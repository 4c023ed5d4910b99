// Cost-model closed forms: causal pair counts, FLOPs of each piece, parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "runtime/cost_model.h"
#include "runtime/parallel/context/costs.h"
#include "test_estimate_support.h"

namespace lowband {
namespace {

// Reference: count the pairs (q, k) with k <= q one by one.
double brute_pairs(int64_t qb, int64_t qe, int64_t kb, int64_t ke) {
  double n = 0;
  for (int64_t q = qb; q < qe; ++q)
    for (int64_t k = kb; k < ke; ++k) n += k <= q ? 1 : 0;
  return n;
}

TEST(CostModel, CausalPairsMatchesCountingOneByOne) {
  // Blocks before, after, overlapping and equal to each other, and empty ones.
  const int64_t edges[] = {0, 1, 5, 17, 32, 33, 64};
  for (int64_t qb : edges)
    for (int64_t qe : edges)
      for (int64_t kb : edges)
        for (int64_t ke : edges) {
          if (qe < qb || ke < kb) continue;
          EXPECT_EQ(cost::causal_pairs(qb, qe, kb, ke), brute_pairs(qb, qe, kb, ke))
              << qb << " " << qe << " " << kb << " " << ke;
        }
}

TEST(CostModel, CausalPairsOverAllBlocksIsTriangle) {
  // Whatever the split, all (query rank, key rank) blocks together hold T(T+1)/2 pairs.
  for (int64_t T : {int64_t{4096}, int64_t{4099}, int64_t{131072}}) {
    for (int P : {1, 3, 8, 64}) {
      for (CpSplit split : {CpSplit::contiguous, CpSplit::zigzag}) {
        double total = 0;
        for (int q = 0; q < P; ++q)
          for (int k = 0; k < P; ++k)
            total += parallel::causal_pairs(parallel::rank_token_ranges(T, P, split, q),
                                            parallel::rank_token_ranges(T, P, split, k));
        const double expected = static_cast<double>(T) * (T + 1) / 2;
        EXPECT_EQ(total, expected) << "T=" << T << " P=" << P;
      }
    }
  }
}

std::vector<double> work_per_rank(int64_t T, int P, CpSplit split) {
  const std::vector<parallel::TokenRange> all = {{0, T}};
  std::vector<double> work;
  for (int r = 0; r < P; ++r)
    work.push_back(parallel::causal_pairs(parallel::rank_token_ranges(T, P, split, r), all));
  return work;
}

TEST(CostModel, ZigzagBalancesCausalWork) {
  // T divisible by 2P, chunk c = T/(2P): rank r holds chunks r and 2P-1-r, and
  // chunk i sees c·(i·c) + c(c+1)/2 pairs, so every rank does c²(2P-1) + c(c+1).
  const int64_t T = 8192;
  for (int P : {2, 4, 8}) {
    const double c = static_cast<double>(T) / (2 * P);
    for (double w : work_per_rank(T, P, CpSplit::zigzag)) EXPECT_EQ(w, c * c * (2 * P - 1) + c * (c + 1));
    // Contiguous: the last rank does (2P-1)·n² + ... i.e. far more than the first (n(n+1)/2).
    const auto contiguous = work_per_rank(T, P, CpSplit::contiguous);
    const double n = static_cast<double>(T) / P;
    EXPECT_EQ(contiguous.front(), n * (n + 1) / 2);
    EXPECT_EQ(contiguous.back(), n * n * (P - 1) + n * (n + 1) / 2);
  }
  // Uneven lengths: ranks differ by less than one chunk's worth (a chunk of
  // ceil(T/2P) queries against all T keys).
  const int64_t uneven = 8191;
  for (int P : {3, 7}) {
    const auto w = work_per_rank(uneven, P, CpSplit::zigzag);
    const double chunk = static_cast<double>((uneven + 2 * P - 1) / (2 * P));
    EXPECT_LE(*std::max_element(w.begin(), w.end()) - *std::min_element(w.begin(), w.end()), chunk * uneven);
  }
}

TEST(CostModel, DenseFlopsClosedForms) {
  ModelConfig m = testing::small_cp_scenario().model;
  m.kv_heads = 2;  // GQA: d_kv = 2 · 64 = 128
  const double n = 1000, d = 256, d_kv = 128, ffn = 1024, vocab = 1000;
  EXPECT_EQ(cost::qkv_forward(m, n, 2).flops, 2 * n * d * (d + 2 * d_kv));
  EXPECT_EQ(cost::out_proj_forward(m, n, 2).flops, 2 * n * d * d);
  EXPECT_EQ(cost::mlp_forward(m, n, 2).flops, 3 * 2 * n * d * ffn);
  EXPECT_EQ(cost::lm_head_forward(m, n, 2).flops, 2 * n * d * vocab);
  // backward = 2 x forward for dense pieces
  const cost::Cost mlp = cost::mlp_forward(m, n, 2);
  EXPECT_EQ(cost::dense_backward(mlp).flops, 2 * mlp.flops);
  EXPECT_EQ(cost::dense_backward(mlp).bytes, 2 * mlp.bytes);
}

TEST(CostModel, AttentionFlopsCountOnlyUnmaskedPairs) {
  const ModelConfig m = testing::small_cp_scenario().model;  // 4 heads of 64
  const double pairs = cost::causal_pairs(0, 512, 0, 512);   // 512·513/2
  EXPECT_EQ(pairs, 512.0 * 513 / 2);
  const cost::Cost fwd = cost::attention_forward(m, pairs, 512, 512, 2);
  EXPECT_EQ(fwd.flops, 4 * pairs * 64 * 4);
  EXPECT_EQ(cost::attention_backward(m, pairs, 512, 512, 2).flops, 2.5 * fwd.flops);
  // A block entirely in the future is masked out: no work at all.
  EXPECT_EQ(cost::attention_forward(m, cost::causal_pairs(0, 512, 512, 1024), 512, 512, 2).flops, 0);
}

TEST(CostModel, ParametersOfThePaperModel) {
  // 8 layers, d 2048, 8 heads = 8 kv heads, ffn 8192, vocab 50257, untied:
  // layer = 2d + d(d + 2d) + d² + 3·d·ffn = 4096 + 12,582,912 + 4,194,304 + 50,331,648
  //       = 67,112,960; embedding = LM head = 50257·2048 = 102,926,336; final norm 2048.
  ModelConfig m;
  m.layers = 8, m.d_model = 2048, m.heads = 8, m.kv_heads = 8, m.ffn_hidden = 8192, m.vocab = 50257;
  EXPECT_EQ(cost::layer_parameters(m), 67112960.0);
  EXPECT_EQ(m.parameters(), 8 * 67112960.0 + 2 * 102926336.0 + 2048);
  m.tie_embeddings = true;
  EXPECT_EQ(m.parameters(), 8 * 67112960.0 + 102926336.0 + 2048);
}

TEST(CostModel, SecondsIsTheRooflineWithEfficiency) {
  const sim::DeviceProfile a100 = testing::builtin_device("A100-80GB");
  // Compute-bound (1e15 FLOPs, 1 MB): flops / (312e12 · 0.45).
  EXPECT_DOUBLE_EQ(cost::seconds(a100, 1e15, 1e6, sim::DType::bf16), 1e15 / (312e12 * 0.45));
  // Memory-bound (1 FLOP, 1e12 bytes): bytes / (2039e9 · 0.45).
  EXPECT_DOUBLE_EQ(cost::seconds(a100, 1, 1e12, sim::DType::bf16), 1e12 / (2039e9 * 0.45));
}

TEST(CostModel, MosProjectionIsLinearInTokensAndRank) {
  const ModelConfig m = testing::small_cp_scenario().model;  // 4 kv heads of 64
  // C = Z·U per kv head for K (rank 2) and V (rank 4): 2·n·64·6 per head, plus
  // building U(θ) (4·64·6 per head) and θ = ψ(mean) (2·n·d_kv).
  const double n = 100;
  EXPECT_EQ(cost::mos_project(m, 2, 4, n, 2).flops, 4 * (2 * n * 64 * 6 + 4 * 64 * 6) + 2 * n * 256);
  EXPECT_EQ(cost::mos_reconstruct(m, 2, 4, n, 2).flops, 4 * (2 * n * 64 * 6 + 4 * 64 * 6));
}

}  // namespace
}  // namespace lowband
