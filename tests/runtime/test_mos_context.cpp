// MoS inside the context-parallel trainer (runtime/parallel/layout_trainer.h):
// with r = head_dim the compressed run equals the uncompressed one, and at a low
// rank the recorded K/V bytes are the codec's closed form.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/compress/make_codec.h"
#include "runtime/compress/mos_codec.h"
#include "runtime/estimate/estimate.h"
#include "runtime/parallel/context/attention.h"
#include "runtime/parallel/context/kv_agreement.h"
#include "runtime/parallel/context/rank.h"
#include "runtime/parallel/layout_trainer.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_tiny_context.h"

namespace lowband::compress {
namespace {

Scenario tiny(std::vector<std::string> compression) { return test_support::tiny_context(std::move(compression)); }
std::vector<int32_t> tokens(const Scenario& s, int step) { return test_support::step_tokens(s, step); }
std::vector<float> losses(const Scenario& s, int steps) { return test_support::step_losses(s, steps); }

TEST(MosContext, FullRankEqualsUncompressedOverSteps) {
  // head_dim 8, r = 8: U₀ square orthonormal; θ starts at 0 and after the first compressed
  // step moves by ~lr, so U(θ)U(θ)ᵀ = I + ¼θ⁴A⁴ stays I to fp32 rounding. Expect every
  // step's loss within relative 1e-5 of the uncompressed run (2 warm-up + 4 compressed).
  const auto plain = losses(tiny({"compression.method=none"}), 6);
  const auto mos = losses(tiny({"compression.method=mos", "compression.k_rank=8", "compression.v_rank=8",
                                "compression.warmup_steps=2", "compression.k_frame=post_rope"}),
                          6);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(mos[i], plain[i], 1e-5 * std::abs(plain[i])) << "step " << i;
  // And a low rank does change the run once compressing (the comparison can fail).
  const auto low = losses(tiny({"compression.method=mos", "compression.k_rank=1", "compression.v_rank=1",
                                "compression.warmup_steps=2", "compression.k_frame=post_rope"}),
                          4);
  EXPECT_EQ(low[0], plain[0]);
  EXPECT_EQ(low[1], plain[1]);
  EXPECT_GT(std::abs(low[3] - plain[3]), 1e-4 * std::abs(plain[3]));
}

// compression.owner_kv reconstructed (the paper's constraint): the owner of a
// block attends to the reconstruction its receivers decode, bit for bit; with
// the default (exact) it attends to its own K/V, which differs from theirs.
TEST(MosContext, OwnerAttendsWhatItsReceiversDecode) {
  // Every layer compressed (the final layer's exact blocks: FinalLayerCrossesUncompressed).
  const std::vector<std::string> mos = {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=3",
                                        "compression.warm_start=false", "compression.compress_final_layer=true"};
  for (const char* owner_kv : {"reconstructed", "exact"}) {
    SCOPED_TRACE(owner_kv);
    std::vector<std::string> sets = mos;
    sets.push_back(std::string("compression.owner_kv=") + owner_kv);
    const Scenario s = tiny(sets);
    parallel::LayoutTrainer cp(s);
    parallel::StepRecord rec;
    for (int step = 0; step < 2; ++step) {
      const auto in = tokens(s, step);
      rec = cp.train_step(step, in.data(), in.data(), s.training.batch_size, false);
    }
    const int P = s.parallel.context;
    // What steps.jsonl logs (kv_owner_receiver_error): 0 in every layer when the
    // owner is constrained; nothing to compare when it attends to its exact K/V.
    if (std::string(owner_kv) == "exact") {
      EXPECT_TRUE(rec.kv_owner_receiver_error_k.empty());
    } else {
      ASSERT_EQ(rec.kv_owner_receiver_error_k.size(), size_t(s.model.layers));
      ASSERT_EQ(rec.kv_owner_receiver_error_v.size(), size_t(s.model.layers));
      for (int l = 0; l < s.model.layers; ++l)
        EXPECT_EQ(rec.kv_owner_receiver_error_k[size_t(l)] + rec.kv_owner_receiver_error_v[size_t(l)], 0.0);
      // The figure can fail: one receiver's copy of owner 0's V in layer 1 changed.
      std::vector<const parallel::ContextAttention*> group;
      for (int r = 0; r < P; ++r) group.push_back(cp.rank(r).context());
      float* theirs = const_cast<float*>(group[2]->attended_kv(1, KvTensor::v, 0));
      const float kept = theirs[3];
      theirs[3] += 1.0f;
      std::vector<double> k, v;
      parallel::owner_receiver_errors(group, s.model.layers, int64_t(s.model.kv_heads) * s.model.head_dim(),
                                      cp.backend(), k, v);
      EXPECT_EQ(k[1] + v[0], 0.0);
      EXPECT_GT(v[1], 1e-4);
      theirs[3] = kept;
    }
    for (int l = 0; l < s.model.layers; ++l)
      for (KvTensor t : {KvTensor::k, KvTensor::v})
        for (int o = 0; o < P; ++o) {
          const parallel::ContextAttention& owner = *cp.rank(o).context();
          const size_t count = size_t(owner.rows(o) * s.model.kv_heads * s.model.head_dim());
          const float* own = owner.attended_kv(l, t, o);
          if (std::string(owner_kv) == "exact") {
            EXPECT_EQ(own, nullptr);  // its exact K/V: compare them with what rank o+1 decoded
            const auto& a = cp.model(o).activations(l);
            const float* theirs = cp.rank((o + 1) % P).context()->attended_kv(l, t, o);
            double diff = 0, norm = 0;
            for (size_t i = 0; i < count; ++i) {
              const float z = (t == KvTensor::k ? a.k : a.v)[i];
              diff += double(z - theirs[i]) * (z - theirs[i]), norm += double(z) * z;
            }
            EXPECT_GT(std::sqrt(diff / norm), 0.05) << "layer " << l << " owner " << o;
            continue;
          }
          ASSERT_NE(own, nullptr);
          for (int r = 0; r < P; ++r)
            EXPECT_EQ(std::memcmp(own, cp.rank(r).context()->attended_kv(l, t, o), count * sizeof(float)), 0)
                << "layer " << l << " owner " << o << " receiver " << r;
        }
  }
}

TEST(MosContext, FullRankOwnerReconstructedEqualsUncompressed) {
  // As FullRankEqualsUncompressedOverSteps, with every rank (the owner too)
  // attending to the reconstruction and the owner's gradient through the codec:
  // at r = head_dim the constraint is the identity.
  const auto plain = losses(tiny({"compression.method=none"}), 6);
  const auto mos = losses(tiny({"compression.method=mos", "compression.k_rank=8", "compression.v_rank=8",
                                "compression.warmup_steps=2", "compression.k_frame=post_rope",
                                "compression.owner_kv=reconstructed"}),
                          6);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(mos[i], plain[i], 1e-5 * std::abs(plain[i])) << "step " << i;
}

// compression.method drop, the K/V comparisons' floor: every rank attends to
// zeros in place of the other ranks' blocks, no K/V or dK/dV byte is recorded,
// and the run differs from the uncompressed one (so remote context mattered).
TEST(DropContext, ReceiversAttendToZerosAndNothingIsSent) {
  const Scenario s = tiny({"compression.method=drop"});
  parallel::LayoutTrainer cp(s);
  const auto in = tokens(s, 0);
  const auto rec = cp.train_step(0, in.data(), in.data(), s.training.batch_size, true);
  const int P = s.parallel.context;
  for (int r = 0; r < P; ++r) {
    for (const char* kind : {"kv", "dkv"}) EXPECT_EQ(rec.graph.bytes_sent(r, kind), 0.0) << kind << " rank " << r;
    for (int o = 0; o < P; ++o) {
      if (o == r) continue;
      const parallel::ContextAttention& receiver = *cp.rank(r).context();
      const size_t count = size_t(receiver.rows(o) * s.model.kv_heads * s.model.head_dim());
      const float* seen = receiver.attended_kv(0, KvTensor::k, o);
      ASSERT_NE(seen, nullptr);
      EXPECT_TRUE(std::all_of(seen, seen + count, [](float v) { return v == 0.0f; })) << "rank " << r << " owner " << o;
    }
  }
  const auto plain = losses(tiny({"compression.method=none"}), 3);
  const auto dropped = losses(s, 3);
  EXPECT_GT(std::abs(dropped[2] - plain[2]), 1e-4 * std::abs(plain[2]));
}

// And nothing crosses: with drop, what rank 1 predicts on its first chunk
// (positions 8..15 of 64, zigzag over 4 ranks) cannot depend on rank 0's tokens;
// uncompressed, it does (the check can fail).
TEST(DropContext, ARanksPredictionsIgnoreOtherRanksTokens) {
  for (const char* method : {"drop", "none"}) {
    SCOPED_TRACE(method);
    const Scenario s = tiny({std::string("compression.method=") + method});
    parallel::LayoutTrainer cp(s);
    for (int step = 0; step < 2; ++step) {
      const auto in = tokens(s, step);
      cp.train_step(step, in.data(), in.data(), s.training.batch_size, false);
    }
    auto in = tokens(s, 5);
    const int64_t T = s.model.seq_len, chunk = T / (2 * s.parallel.context);
    std::vector<int32_t> target(in.size(), -1);
    for (int b = 0; b < s.training.batch_size; ++b)
      for (int64_t t = chunk; t < 2 * chunk; ++t) target[size_t(b * T + t)] = in[size_t(b * T + t + 1)];
    const float before = cp.evaluate(in.data(), target.data(), s.training.batch_size);
    for (int b = 0; b < s.training.batch_size; ++b)
      for (int64_t t = 0; t < chunk; ++t) in[size_t(b * T + t)] = (in[size_t(b * T + t)] + 7) % s.model.vocab;
    const float after = cp.evaluate(in.data(), target.data(), s.training.batch_size);
    if (std::string(method) == "drop") EXPECT_EQ(before, after);
    else EXPECT_NE(before, after);
  }
}

// The recorded K/V and dK/dV bytes do not depend on what the owner attends to.
TEST(MosContext, OwnerReconstructedSendsTheSameBytes) {
  const std::vector<std::string> mos = {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=3",
                                        "compression.warmup_steps=1"};
  std::vector<std::string> rec = mos;
  rec.push_back("compression.owner_kv=reconstructed");
  const Scenario a = tiny(mos), b = tiny(rec);
  parallel::LayoutTrainer ta(a), tb(b);
  for (int step = 0; step < 3; ++step) {  // warm-up, then compressing
    const auto in = tokens(a, step);
    const auto ra = ta.train_step(step, in.data(), in.data(), a.training.batch_size, true);
    const auto rb = tb.train_step(step, in.data(), in.data(), b.training.batch_size, true);
    for (int r = 0; r < a.parallel.context; ++r)
      for (const char* kind : {"kv", "dkv"})
        EXPECT_EQ(ra.graph.bytes_sent(r, kind), rb.graph.bytes_sent(r, kind)) << kind << " rank " << r;
  }
}

// With the owner constrained too, the trained gradient must be the gradient of
// the loss the constrained forward computes: central finite differences of the
// mean loss (LayoutTrainer::evaluate, every rank's copy moved alike) against the
// ranks' summed gradients, at the W_k, W_v and W_q entries of layer 0 with the
// largest gradients. (The codec's own backward is held against float64 in
// test_mos_gradcheck.cpp.)
TEST(MosContext, OwnerReconstructedGradientIsTheLossGradient) {
  const Scenario s = tiny({"compression.method=mos", "compression.k_rank=2", "compression.v_rank=3",
                           "compression.warm_start=false", "compression.owner_kv=reconstructed"});
  parallel::LayoutTrainer cp(s);
  const auto in = tokens(s, 0);
  std::vector<int32_t> target(in.begin() + 1, in.end());
  target.push_back(-1);
  const int P = s.parallel.context, B = s.training.batch_size;
  cp.on_ranks([&](int, parallel::RankProgram& p, comm::Communicator& comm) {
    p.context()->begin_codec_step(comm, 0);
    dynamic_cast<parallel::ContextRank&>(p).forward_backward(comm, in.data(), target.data(), B, false);
  });
  const int64_t count = cp.model(0).param_count();
  std::vector<double> grad(size_t(count), 0.0);
  for (int r = 0; r < P; ++r)
    for (int64_t i = 0; i < count; ++i) grad[size_t(i)] += cp.model(r).grads()[i];
  int checked = 0;
  for (const char* name : {"layers.0.wk", "layers.0.wv", "layers.0.wq"}) {
    const model::TensorInfo& t = cp.model(0).layout().find(name);
    std::vector<int64_t> idx(size_t(t.count()));
    for (int64_t i = 0; i < t.count(); ++i) idx[size_t(i)] = t.offset + i;
    std::partial_sort(idx.begin(), idx.begin() + 4, idx.end(),
                      [&](int64_t a, int64_t b) { return std::abs(grad[size_t(a)]) > std::abs(grad[size_t(b)]); });
    for (int k = 0; k < 4; ++k) {
      const int64_t i = idx[size_t(k)];
      const float eps = 1e-2f, w = cp.model(0).params()[i];
      auto loss_at = [&](float value) {
        for (int r = 0; r < P; ++r) cp.model(r).params()[i] = value;
        return double(cp.evaluate(in.data(), target.data(), B));
      };
      const double fd = (loss_at(w + eps) - loss_at(w - eps)) / (2.0 * eps);
      loss_at(w);
      EXPECT_NEAR(grad[size_t(i)], fd, 0.03 * std::abs(fd) + 2e-4) << name << " element " << i - t.offset;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12);
}

// The paper's setup (compression.compress_final_layer false, the default): the
// final layer's K/V reach every receiver exactly while layer 0's are compressed,
// and a step's K/V and dK/dV bytes are the closed form of one uncompressed layer
// plus one compressed; with the key true both layers compress (the bytes before
// the key existed), and estimate's dry step carries the same bytes.
TEST(MosContext, FinalLayerCrossesUncompressed) {
  for (bool all : {false, true}) {
    SCOPED_TRACE(all ? "compress_final_layer true" : "default");
    const Scenario s = tiny({"compression.method=mos", "compression.k_rank=2", "compression.v_rank=3",
                             "compression.warmup_steps=1",
                             std::string("compression.compress_final_layer=") + (all ? "true" : "false")});
    parallel::LayoutTrainer cp(s);
    parallel::StepRecord rec;
    for (int step = 0; step < 3; ++step) {  // a warm-up step, then compressing
      const auto in = tokens(s, step);
      rec = cp.train_step(step, in.data(), in.data(), s.training.batch_size, true);
    }
    const int P = s.parallel.context, L = s.model.layers, H = s.model.kv_heads, d = s.model.head_dim();
    ASSERT_EQ(L, 2);
    for (int l = 0; l < L; ++l)
      for (KvTensor t : {KvTensor::k, KvTensor::v})
        for (int o = 0; o < P; ++o) {
          const auto& a = cp.model(o).activations(l);
          const float* z = t == KvTensor::k ? a.k : a.v;
          const size_t count = size_t(cp.rank(o).context()->rows(o) * H * d);
          const float* seen = cp.rank((o + 1) % P).context()->attended_kv(l, t, o);
          double diff = 0, norm = 0;
          for (size_t i = 0; i < count; ++i) diff += double(z[i] - seen[i]) * (z[i] - seen[i]), norm += double(z[i]) * z[i];
          if (l == L - 1 && !all)
            EXPECT_EQ(diff, 0.0) << "layer " << l << " owner " << o;
          else
            EXPECT_GT(std::sqrt(diff / norm), 0.05) << "layer " << l << " owner " << o;
        }
    // Each owner's blocks (2 sequences x 2 zigzag chunks of 8 rows, K and V) reach
    // the P − 1 others once, and their gradients come back as much: per layer
    // compressed, H·(rows·rank·b + 4) bytes per block (θ, dθ as float32);
    // uncompressed, H·rows·d·b.
    const double b = s.model.bytes_per_element, rows = 2 * 16, blocks = 2 * 2;
    const double packed = H * (rows * (2 + 3) * b + 4 * 2 * blocks);
    const double plain = H * rows * 2 * d * b;
    const double per_step = (P - 1) * P * (all ? 2 * packed : packed + plain);
    for (const char* kind : {"kv", "dkv"}) {
      double sent = 0;
      for (int r = 0; r < P; ++r) sent += rec.graph.bytes_sent(r, kind);
      EXPECT_DOUBLE_EQ(sent, per_step) << kind;
    }
    const Estimate e = estimate(s);
    ASSERT_TRUE(e.context);
    EXPECT_NEAR(e.context->kv_bytes_ratio, (all ? 2 * packed : packed + plain) / (2 * plain), 1e-12);
  }
}

// compression.rotation_params 2 in a run: 2 θ per head and block cross each
// way (4·2 bytes), and training moves both generators' ψ.
TEST(MosContext, TwoRotationGeneratorsCrossAndTrain) {
  const Scenario s = tiny({"compression.method=mos", "compression.k_rank=2", "compression.v_rank=3",
                           "compression.warm_start=false", "compression.compress_final_layer=true",
                           "compression.rotation_params=2"});
  parallel::LayoutTrainer cp(s);
  parallel::StepRecord rec;
  for (int step = 0; step < 2; ++step) {
    const auto in = tokens(s, step);
    rec = cp.train_step(step, in.data(), in.data(), s.training.batch_size, true);
  }
  const int P = s.parallel.context, H = s.model.kv_heads;
  const double b = s.model.bytes_per_element, rows = 2 * 16, blocks = 2 * 2;
  const double per_owner_layer = H * (rows * (2 + 3) * b + 2 * 4 * 2 * blocks);  // K and V, θ 2 x float32
  for (const char* kind : {"kv", "dkv"}) {
    double sent = 0;
    for (int r = 0; r < P; ++r) sent += rec.graph.bytes_sent(r, kind);
    EXPECT_DOUBLE_EQ(sent, (P - 1) * P * 2 * per_owner_layer) << kind;
  }
  auto& codec = const_cast<MosCodec&>(dynamic_cast<const MosCodec&>(cp.rank(0).context()->codec()));
  ASSERT_EQ(codec.m(), 2);
  const int d = s.model.head_dim();
  const int64_t second = codec.param_offset(0, KvTensor::v, 0) + (d + 1);  // ψ₁, b₁ of layer 0's V, head 0
  double moved = 0;  // from 0
  for (int e = 0; e <= d; ++e) moved += std::abs(codec.params()[second + e]);
  EXPECT_GT(moved, 0.0);
}

TEST(MosContext, SequencesInFlightTrainAsOneSlot) {
  // Two sequences in flight (parallel.microbatches = 2: each layer's halves
  // interleaved over two slots of one sequence) through a compressing codec with
  // its warm-up Gram sums and learned rotation: the same blocks, so the same
  // losses as one slot to fp32 rounding (the slots' GEMMs and gradient sums run
  // in another order), warm-up included and six compressed steps after it.
  const std::vector<std::string> mos = {"compression.method=mos", "compression.k_rank=2", "compression.v_rank=3",
                                        "compression.warmup_steps=2"};
  std::vector<std::string> two = mos;
  two.push_back("parallel.microbatches=2");
  const auto one_slot = losses(tiny(mos), 8), two_slots = losses(tiny(two), 8);
  for (size_t i = 0; i < one_slot.size(); ++i)
    EXPECT_NEAR(two_slots[i], one_slot[i], 1e-5 * std::abs(one_slot[i])) << "step " << i;
}

}  // namespace
}  // namespace lowband::compress
