// The baselines' uncompressed parts (runtime/compress/uncompressed_parts.h):
// topk with compression.warmup_steps trains exactly as the uncompressed run
// through its warm-up and as topk from step 0 sends once it compresses; with
// compress_final_layer false the final layer's K/V reach receivers exactly; the
// keys resolve, round-trip and upgrade from runs recorded before them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/estimate/estimate.h"
#include "runtime/parallel/context/attention.h"
#include "runtime/parallel/context/rank.h"
#include "runtime/scenario/load.h"
#include "tests/runtime/test_tiny_context.h"

namespace lowband::compress {
namespace {

using test_support::step_losses;
using test_support::step_tokens;
using test_support::tiny_context;

// Per step, the K/V and dK/dV bytes all ranks send.
std::vector<double> kv_bytes_per_step(const Scenario& s, int steps) {
  parallel::LayoutTrainer cp(s);
  std::vector<double> out;
  for (int step = 0; step < steps; ++step) {
    const auto in = step_tokens(s, step);
    const auto rec = cp.train_step(step, in.data(), in.data(), s.training.batch_size, true);
    double sent = 0;
    for (int r = 0; r < s.parallel.context; ++r) sent += rec.graph.bytes_sent(r, "kv") + rec.graph.bytes_sent(r, "dkv");
    out.push_back(sent);
  }
  return out;
}

TEST(UncompressedParts, TopkWarmUpIsTheUncompressedRunThenTopk) {
  const std::vector<std::string> topk = {"compression.method=topk", "compression.topk_fraction=0.25"};
  std::vector<std::string> warm = topk;
  warm.push_back("compression.warmup_steps=2");
  const Scenario plain = tiny_context({"compression.method=none"}), cold = tiny_context(topk),
                 warmed = tiny_context(warm);
  const auto plain_loss = step_losses(plain, 4), warm_loss = step_losses(warmed, 4);
  EXPECT_EQ(warm_loss[0], plain_loss[0]);
  EXPECT_EQ(warm_loss[1], plain_loss[1]);
  EXPECT_GT(std::abs(warm_loss[3] - plain_loss[3]), 1e-4 * std::abs(plain_loss[3]));  // it does compress after

  const auto plain_bytes = kv_bytes_per_step(plain, 3), cold_bytes = kv_bytes_per_step(cold, 3),
             warm_bytes = kv_bytes_per_step(warmed, 3);
  EXPECT_EQ(warm_bytes[0], plain_bytes[0]);
  EXPECT_EQ(warm_bytes[1], plain_bytes[1]);
  EXPECT_EQ(warm_bytes[2], cold_bytes[2]);
  EXPECT_LT(cold_bytes[2], 0.7 * plain_bytes[2]);
  // estimate's steady step is a compressed one, as from step 0.
  ASSERT_TRUE(estimate(warmed).context && estimate(cold).context);
  EXPECT_EQ(estimate(warmed).context->kv_bytes_ratio, estimate(cold).context->kv_bytes_ratio);
  EXPECT_LT(estimate(warmed).context->kv_bytes_ratio, 0.7);
}

// compress_final_layer false on a baseline: the last layer's K/V are attended
// to exactly, layer 0's are not, and the bytes are one plain layer plus one topk.
TEST(UncompressedParts, BaselineFinalLayerCrossesUncompressed) {
  for (const char* method : {"topk", "quantize"}) {
    SCOPED_TRACE(method);
    std::vector<std::string> sets = {std::string("compression.method=") + method};
    if (std::string(method) == "topk") sets.push_back("compression.topk_fraction=0.25");
    const Scenario all = tiny_context(sets);
    sets.push_back("compression.compress_final_layer=false");
    const Scenario s = tiny_context(sets);
    EXPECT_TRUE(all.compression.compress_final_layer);  // the baselines' default
    parallel::LayoutTrainer cp(s);
    const auto in = step_tokens(s, 0);
    cp.train_step(0, in.data(), in.data(), s.training.batch_size, false);
    const int P = s.parallel.context, H = s.model.kv_heads, d = s.model.head_dim();
    for (int l = 0; l < s.model.layers; ++l)
      for (int o = 0; o < P; ++o) {
        const float* z = cp.model(o).activations(l).k;
        const float* seen = cp.rank((o + 1) % P).context()->attended_kv(l, KvTensor::k, o);
        const size_t count = size_t(cp.rank(o).context()->rows(o) * H * d);
        double diff = 0;
        for (size_t i = 0; i < count; ++i) diff += std::abs(double(z[i]) - seen[i]);
        if (l + 1 == s.model.layers) EXPECT_EQ(diff, 0.0) << "layer " << l << " owner " << o;
        else EXPECT_GT(diff, 0.0) << "layer " << l << " owner " << o;
      }
    const double plain = kv_bytes_per_step(tiny_context({"compression.method=none"}), 1)[0];
    const double compressed = kv_bytes_per_step(all, 1)[0];
    EXPECT_DOUBLE_EQ(kv_bytes_per_step(s, 1)[0], plain / 2 + compressed / 2);
  }
}

TEST(UncompressedParts, KeysResolveRoundTripAndUpgrade) {
  const Scenario topk = tiny_context({"compression.method=topk"});
  EXPECT_EQ(topk.compression.warmup_steps, 0);
  EXPECT_TRUE(topk.compression.compress_final_layer);
  const Scenario mos = tiny_context({"compression.method=mos", "compression.k_rank=2", "compression.v_rank=2"});
  EXPECT_EQ(mos.compression.warmup_steps, 500);
  EXPECT_FALSE(mos.compression.compress_final_layer);

  const Scenario warmed = tiny_context({"compression.method=drop", "compression.warmup_steps=7",
                                        "compression.compress_final_layer=false"});
  nlohmann::json recorded = to_json(warmed);
  EXPECT_EQ(recorded["compression"]["warmup_steps"], 7);
  EXPECT_EQ(recorded["compression"]["compress_final_layer"], false);
  nlohmann::json now = recorded;
  upgrade_recorded_scenario(now);
  EXPECT_EQ(now, recorded);  // a record with the keys is read as written
  const Scenario back = parse_scenario(now, "run");
  EXPECT_EQ(back.compression.warmup_steps, 7);
  EXPECT_FALSE(back.compression.compress_final_layer);

  // Before the keys, a topk run recorded warmup_steps 500 and compressed from step 0.
  nlohmann::json old = to_json(topk);
  old["compression"].erase("compress_final_layer");
  old["compression"]["warmup_steps"] = 500;
  upgrade_recorded_scenario(old);
  const Scenario old_run = parse_scenario(old, "old run");
  EXPECT_EQ(old_run.compression.warmup_steps, 0);
  EXPECT_TRUE(old_run.compression.compress_final_layer);

  try {
    tiny_context({"compression.method=none", "compression.compress_final_layer=false"});
    ADD_FAILURE() << "compress_final_layer accepted with method none";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("compress_final_layer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lowband::compress
