// SparseLoCo's packed message (runtime/sync/pack.h): round trips bit for bit,
// its size is the header's formula, and a model's message is about 0.027 bytes
// per parameter at k = 64 of 4096 with 2-bit values. Aggregation
// (runtime/sync/aggregate.h) over all replicas and over the choosers, against
// sums written out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/sync/aggregate.h"
#include "runtime/sync/pack.h"
#include "tests/runtime/test_sparseloco_support.h"

namespace lowband::sync::test {
namespace {

// The formula of pack.h, from the chunk sizes.
int64_t formula_bytes(const ChunkPlan& plan, int k, int bits) {
  int64_t K = 0;
  for (const Chunk& c : plan.chunks) K += std::min<int64_t>(k, c.size());
  const int64_t index_bytes = (12 * K + 7) / 8;
  if (bits == 32) return index_bytes + 4 * K;
  return 4 * plan.tensors * (int64_t(1) << bits) + index_bytes + (bits * K + 7) / 8;
}

SparseMessage compressed(const ChunkPlan& plan, const SparseCodec& codec, unsigned seed) {
  const auto delta = normal_values(plan.elements, 1e-2, seed);
  std::vector<float> error(size_t(plan.elements), 0.0f);
  return codec.compress(plan, delta.data(), error.data(), 0.95);
}

TEST(SparseLocoPack, RoundTripsAndHasTheFormulasSize) {
  const ChunkPlan plan = plan_chunks(mixed_tensors(), 64);
  for (int bits : {1, 2, 3, 7, 8, 32})
    for (int k : {1, 3, 64}) {
      const SparseCodec codec{k, bits};
      const SparseMessage m = compressed(plan, codec, unsigned(bits * 10 + k));
      const std::vector<uint8_t> bytes = pack(plan, codec, m);
      EXPECT_EQ(int64_t(bytes.size()), formula_bytes(plan, k, bits)) << bits << " " << k;
      EXPECT_EQ(packed_bytes(plan, codec), formula_bytes(plan, k, bits));
      const SparseMessage back = unpack(plan, codec, bytes.data(), int64_t(bytes.size()));
      EXPECT_TRUE(back == m) << "bits " << bits << " k " << k;
      EXPECT_EQ(pack(plan, codec, back), bytes);
    }
}

TEST(SparseLocoPack, TwelveBitIndicesReachTheLargestChunkIndex) {
  const ChunkPlan plan = plan_chunks(tensors_of({{64, 64}}), 4096);
  const SparseCodec codec{4096, 32};  // every entry: indices 0..4095, all twelve bits used
  const SparseMessage m = compressed(plan, codec, 3u);
  ASSERT_EQ(m.index.back(), 4095);
  const auto bytes = pack(plan, codec, m);
  EXPECT_EQ(bytes.size(), size_t(4096 * 12 / 8 + 4 * 4096));
  EXPECT_TRUE(unpack(plan, codec, bytes.data(), int64_t(bytes.size())) == m);
}

TEST(SparseLocoPack, RefusesAWrongSizeAndAnIndexOutsideItsChunk) {
  const ChunkPlan plan = plan_chunks(tensors_of({{19, 13}}), 64);
  const SparseCodec codec{4, 2};
  SparseMessage m = compressed(plan, codec, 5u);
  auto bytes = pack(plan, codec, m);
  EXPECT_THROW(unpack(plan, codec, bytes.data(), int64_t(bytes.size()) - 1), std::invalid_argument);
  m.index.back() = 15;  // the last tile is 3 x 5: indices 0..14
  bytes = pack(plan, codec, m);
  EXPECT_THROW(unpack(plan, codec, bytes.data(), int64_t(bytes.size())), std::invalid_argument);
  m.index.pop_back();
  EXPECT_THROW(pack(plan, codec, m), std::invalid_argument);
}

// A model whose matrices are whole 64 x 64 tiles: K = N_matrices / 64 + the
// vectors' share, so bytes / N is 14/512 = 0.02734 plus the tables and the norms.
TEST(SparseLocoPack, AModelsMessageIsAbout0027BytesPerParameter) {
  ModelConfig config;
  config.layers = 4;
  config.d_model = 512;
  config.heads = 8;
  config.kv_heads = 8;
  config.ffn_hidden = 1536;
  config.vocab = 4096;
  config.seq_len = 64;
  const model::ParamLayout layout(config);
  const ChunkPlan plan = plan_chunks(layout, 4096);
  const SparseCodec codec{64, 2};
  const double ratio = double(packed_bytes(plan, codec)) / double(layout.count());
  EXPECT_EQ(packed_bytes(plan, codec), formula_bytes(plan, 64, 2));
  EXPECT_GT(ratio, 14.0 / 512);
  EXPECT_LT(ratio, 0.0280);
  std::printf("SparseLoCo message: %lld bytes for %lld parameters = %.5f bytes per parameter (%.3f %% of float32)\n",
              static_cast<long long>(packed_bytes(plan, codec)), static_cast<long long>(layout.count()), ratio,
              100 * ratio / 4);
  const SparseMessage m = compressed(plan, codec, 9u);
  EXPECT_EQ(int64_t(pack(plan, codec, m).size()), packed_bytes(plan, codec));
}

// Three replicas' messages: each coordinate's sum in rank order over the messages
// that hold it, divided by 3 (all) or by how many hold it (chosen).
TEST(SparseLocoAggregate, AllAndChosenAgainstSumsByHand) {
  const ChunkPlan plan = plan_chunks(mixed_tensors(), 64);
  const SparseCodec codec{9, 2};
  std::vector<SparseMessage> messages;
  for (unsigned r = 0; r < 3; ++r) messages.push_back(compressed(plan, codec, 40u + r));
  std::vector<double> sum(size_t(plan.elements), 0.0);
  std::vector<int> holders(size_t(plan.elements), 0);
  for (const auto& m : messages) {
    std::vector<float> dense(size_t(plan.elements));
    codec.decode(plan, m, dense.data());
    std::vector<bool> held(size_t(plan.elements), false);
    codec.for_each(plan, m, [&](int64_t i, float) { held[size_t(i)] = true; });
    for (size_t i = 0; i < dense.size(); ++i) {
      sum[i] += dense[i];
      holders[i] += held[i] ? 1 : 0;
    }
  }
  std::vector<float> all(size_t(plan.elements)), chosen(size_t(plan.elements));
  aggregate(plan, codec, messages, SparseAverage::all, all.data());
  aggregate(plan, codec, messages, SparseAverage::chosen, chosen.data());
  int only_one = 0, none = 0;
  for (size_t i = 0; i < sum.size(); ++i) {
    ASSERT_EQ(all[i], float(sum[i] / 3)) << i;
    ASSERT_EQ(chosen[i], holders[i] ? float(sum[i] / holders[i]) : 0.0f) << i;
    if (holders[i] == 1) {  // one replica's value: whole under chosen, a third under all
      ++only_one;
      EXPECT_EQ(chosen[i], float(sum[i]));
    }
    if (holders[i] == 0) {
      ++none;
      EXPECT_EQ(all[i], 0.0f);
    }
  }
  EXPECT_GT(only_one, 0);  // the test covers both kinds of coordinate
  EXPECT_GT(none, 0);
}

}  // namespace
}  // namespace lowband::sync::test

namespace lowband::sync {
namespace {

// The closed form estimate's dry syncs use equals the listed chunks' count, for
// tensors that fill their tiles, leave edge tiles and corners, and vectors with
// and without a shorter last run; and so do the message sizes.
TEST(SparseLocoPack, KeptEntriesInClosedFormEqualTheListedChunks) {
  std::vector<model::TensorInfo> tensors;
  int64_t offset = 0;
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {128, 128}, {100, 70}, {300, 3}, {1, 5000}, {4096, 1}, {5, 7}}) {
    model::TensorInfo t;
    t.offset = offset, t.rows = rows, t.cols = cols;
    tensors.push_back(t);
    offset += t.count();
  }
  for (int64_t chunk : {1, 16, 64, 4096})
    for (int k : {1, 3, 32, 5000}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + ", k " + std::to_string(k));
      EXPECT_EQ(kept_entries(tensors, chunk, k), plan_chunks(tensors, chunk).kept(k));
      for (int bits : {2, 32})
        EXPECT_EQ(packed_bytes(tensors, chunk, {k, bits}), packed_bytes(plan_chunks(tensors, chunk), {k, bits}));
    }
  EXPECT_THROW(kept_entries(tensors, 50, 1), std::invalid_argument);
}

}  // namespace
}  // namespace lowband::sync
