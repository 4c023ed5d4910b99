// The "compression" keys of a scenario for the K/V codecs: make_kv_codec picks
// the codec, the keys round-trip through to_json, and bad keys are InputErrors
// that name compression.<key>.
#include <gtest/gtest.h>

#include "common/error.h"
#include "runtime/compress/baseline_codecs.h"
#include "runtime/compress/drop_codec.h"
#include "runtime/compress/identity_codec.h"
#include "runtime/compress/make_codec.h"
#include "runtime/compress/mos_codec.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"

namespace lowband::compress {
namespace {

using nlohmann::json;

Scenario with_compression(const json& compression) {
  json d = json::parse(builtin_scenario_text("default"));
  d["compression"] = compression;
  return parse_scenario(d, "test.json");
}

std::string error_of(const json& compression) {
  try {
    with_compression(compression);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error for " + compression.dump();
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(CodecScenario, MethodPicksTheCodecWithItsKeys) {
  EXPECT_NE(dynamic_cast<IdentityCodec*>(make_kv_codec(with_compression({{"method", "none"}})).get()), nullptr);
  const Scenario mos = with_compression(
      {{"method", "mos"}, {"k_rank", 4}, {"v_rank", 8}, {"rotation", "random"}, {"warm_start", false}});
  EXPECT_EQ(mos.compression.rotation, MosRotation::random);
  EXPECT_FALSE(mos.compression.warm_start);
  EXPECT_EQ(mos.compression.warmup_steps, 0);
  auto codec = make_kv_codec(mos);
  auto* m = dynamic_cast<MosCodec*>(codec.get());
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->options().rotation, MosRotation::random);
  EXPECT_EQ(m->rank(KvTensor::v), 8);
  EXPECT_TRUE(m->compressing());
  EXPECT_EQ(m->m(), 1);
  const auto two = make_kv_codec(with_compression({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 8}, {"rotation_params", 2}}));
  EXPECT_EQ(dynamic_cast<MosCodec*>(two.get())->m(), 2);
  const Scenario topk = with_compression({{"method", "topk"}, {"topk_fraction", 0.25}});
  const auto topk_codec = make_kv_codec(topk);
  auto* t = dynamic_cast<TopkCodec*>(topk_codec.get());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kept(10), 10 * topk.model.d_kv() / 4);  // a quarter of the block
  const Scenario q = with_compression({{"method", "quantize"}, {"bits", 8}, {"block", 32}});
  EXPECT_EQ(q.compression.quantize_bits, 8);
  EXPECT_EQ(q.compression.quantize_block, 32);
  EXPECT_NE(dynamic_cast<QuantizeCodec*>(make_kv_codec(q).get()), nullptr);
  // Defaults: learned rotation with warm start after 500 steps; top 10 %; 4 bits in blocks of 64.
  const Scenario def = with_compression({{"method", "mos"}, {"k_ratio", 0.5}, {"v_ratio", 0.5}});
  EXPECT_EQ(def.compression.rotation, MosRotation::learned);
  EXPECT_TRUE(def.compression.warm_start);
  EXPECT_EQ(def.compression.k_frame, KFrame::pre_rope);
  EXPECT_EQ(with_compression({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"k_frame", "post_rope"}})
                .compression.k_frame,
            KFrame::post_rope);
  EXPECT_EQ(def.compression.warmup_steps, 500);
  EXPECT_EQ(with_compression({{"method", "topk"}}).compression.topk_fraction, 0.1);
  EXPECT_EQ(with_compression({{"method", "quantize"}}).compression.quantize_bits, 4);
  // The owner attends to the reconstruction under mos (the paper's constraint),
  // to its exact K/V under the baselines; the key is always written for mos, for the
  // baselines only off their default.
  EXPECT_EQ(def.compression.owner_kv, OwnerKv::reconstructed);
  EXPECT_EQ(with_compression({{"method", "topk"}}).compression.owner_kv, OwnerKv::exact);
  EXPECT_EQ(with_compression({{"method", "quantize"}}).compression.owner_kv, OwnerKv::exact);
  EXPECT_EQ(to_json(def)["compression"]["owner_kv"], "reconstructed");  // always written for mos
  EXPECT_FALSE(to_json(with_compression({{"method", "topk"}}))["compression"].contains("owner_kv"));
  // A mos scenario a run recorded before the default changed (no key) ran exact.
  json old = to_json(def);
  old["compression"].erase("owner_kv");
  old["compression"].erase("compress_final_layer");
  upgrade_recorded_scenario(old);
  EXPECT_EQ(parse_scenario(old, "old run").compression.owner_kv, OwnerKv::exact);
  // The final layer crosses uncompressed under mos (the paper's setup); the key is
  // always written for mos, and a run recorded without it compressed every layer.
  EXPECT_FALSE(def.compression.compress_final_layer);
  EXPECT_EQ(to_json(def)["compression"]["compress_final_layer"], false);
  EXPECT_EQ(to_json(with_compression({{"method", "topk"}}))["compression"]["compress_final_layer"], true);
  EXPECT_TRUE(parse_scenario(old, "old run").compression.compress_final_layer);
  json now = to_json(def);
  upgrade_recorded_scenario(now);
  EXPECT_EQ(now, to_json(def));
  const Scenario wire = with_compression({{"method", "mos"}, {"k_ratio", 0.5}, {"v_ratio", 0.5}, {"owner_kv", "exact"}});
  EXPECT_EQ(wire.compression.owner_kv, OwnerKv::exact);
  EXPECT_EQ(to_json(wire)["compression"]["owner_kv"], "exact");
  const Scenario drop = with_compression({{"method", "drop"}});
  EXPECT_NE(dynamic_cast<DropCodec*>(make_kv_codec(drop).get()), nullptr);
}

TEST(CodecScenario, KeysRoundTripThroughToJson) {
  for (const json& c : {json{{"method", "mos"}, {"k_rank", 4}, {"v_rank", 8}, {"rotation", "fixed"}, {"k_frame", "post_rope"}},
                        json{{"method", "mos"}, {"k_rank", 4}, {"v_rank", 8}, {"warm_start", false}},
                        json{{"method", "topk"}, {"topk_fraction", 0.05}},
                        json{{"method", "quantize"}, {"bits", 8}, {"block", 16}},
                        json{{"method", "mos"}, {"k_rank", 4}, {"v_rank", 8}, {"owner_kv", "exact"}},
                        json{{"method", "mos"}, {"k_rank", 4}, {"v_rank", 8}, {"compress_final_layer", true}},
                        json{{"method", "mos"}, {"k_rank", 4}, {"v_rank", 8}, {"rotation_params", 3}},
                        json{{"method", "drop"}}}) {
    const Scenario s = with_compression(c);
    const Scenario back = parse_scenario(to_json(s), "round-trip");
    EXPECT_EQ(scenario_difference(s, back), "") << c.dump();
  }
  // And a difference in a new key is seen.
  Scenario a = with_compression({{"method", "topk"}, {"topk_fraction", 0.05}});
  Scenario b = a;
  b.compression.topk_fraction = 0.06;
  EXPECT_CONTAINS(scenario_difference(a, b), "compression.topk_fraction");
}

// U₀ is fitted at the end of compression.warmup_steps: not before the learning
// rate's warm-up ends (the built-in default's training.lr_warmup_steps is 20) unless
// compression.fit_during_lr_warmup says so.
TEST(CodecScenario, MosFitsU0NoEarlierThanTheEndOfTheLearningRateWarmUp) {
  const json early = {{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"warmup_steps", 10}};
  EXPECT_CONTAINS(error_of(early), "compression.warmup_steps: 10 fits U0 while the learning rate still warms up "
                                   "(training.lr_warmup_steps 20): expected at least 20, or "
                                   "compression.fit_during_lr_warmup true");
  json opted = early;
  opted["fit_during_lr_warmup"] = true;
  const Scenario ablation = with_compression(opted);
  EXPECT_TRUE(ablation.compression.fit_during_lr_warmup);
  EXPECT_EQ(to_json(ablation)["compression"]["fit_during_lr_warmup"], true);
  EXPECT_EQ(scenario_difference(ablation, parse_scenario(to_json(ablation), "round-trip")), "");
  // At the end of the learning-rate warm-up, or with nothing fitted (random U₀): no key needed, none written.
  for (const json& c : {json{{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"warmup_steps", 20}},
                        json{{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"warmup_steps", 0}},
                        json{{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"warm_start", false}}})
    EXPECT_FALSE(to_json(with_compression(c))["compression"].contains("fit_during_lr_warmup")) << c.dump();
  EXPECT_CONTAINS(error_of({{"method", "topk"}, {"fit_during_lr_warmup", true}}),
                  "compression.fit_during_lr_warmup: only used with method \"mos\"");
  // A run recorded before the check ran as it was set: its scenario reads back with the opt-in.
  json recorded = to_json(ablation);
  recorded["compression"].erase("fit_during_lr_warmup");
  upgrade_recorded_scenario(recorded);
  EXPECT_TRUE(parse_scenario(recorded, "old run").compression.fit_during_lr_warmup);
  json fine = to_json(with_compression({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"warmup_steps", 30}}));
  const json before = fine;
  upgrade_recorded_scenario(fine);
  EXPECT_EQ(fine, before);
}

TEST(CodecScenario, BadKeysNameCompressionKey) {
  EXPECT_CONTAINS(error_of({{"method", "lz4"}}), "compression.method");
  EXPECT_CONTAINS(error_of({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"rotation", "spin"}}),
                  "compression.rotation");
  EXPECT_CONTAINS(error_of({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"warm_start", "yes"}}),
                  "compression.warm_start");
  EXPECT_CONTAINS(error_of({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"warm_start", false},
                            {"warmup_steps", 300}}),
                  "compression.warmup_steps: warm_start is false");
  EXPECT_CONTAINS(error_of({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"k_frame", "rope"}}),
                  "compression.k_frame");
  EXPECT_CONTAINS(error_of({{"method", "none"}, {"k_frame", "post_rope"}}),
                  "compression.k_frame: only used with method \"mos\"");
  EXPECT_CONTAINS(error_of({{"method", "topk"}, {"rotation", "fixed"}}),
                  "compression.rotation: only used with method \"mos\", but method is \"topk\"");
  EXPECT_CONTAINS(error_of({{"method", "topk"}, {"topk_fraction", 0}}), "compression.topk_fraction");
  EXPECT_CONTAINS(error_of({{"method", "topk"}, {"topk_fraction", 1.5}}), "compression.topk_fraction");
  EXPECT_CONTAINS(error_of({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"topk_fraction", 0.1}}),
                  "compression.topk_fraction: only used with method \"topk\"");
  EXPECT_CONTAINS(error_of({{"method", "quantize"}, {"bits", 2}}), "compression.bits");
  EXPECT_CONTAINS(error_of({{"method", "quantize"}, {"bits", 6}}), "compression.bits: expected 4 or 8, got 6");
  EXPECT_CONTAINS(error_of({{"method", "quantize"}, {"block", 0}}), "compression.block");
  EXPECT_CONTAINS(error_of({{"method", "none"}, {"bits", 8}}), "compression.bits: only used with method \"quantize\"");
  EXPECT_CONTAINS(error_of({{"method", "topk"}, {"k_rank", 3}}), "compression.k_rank: only used with method \"mos\"");
  EXPECT_CONTAINS(error_of({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"rotation_params", 0}}),
                  "compression.rotation_params");
  EXPECT_CONTAINS(error_of({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"rotation_params", 17}}),
                  "compression.rotation_params");
  EXPECT_CONTAINS(error_of({{"method", "mos"}, {"k_rank", 4}, {"v_rank", 4}, {"rotation", "fixed"}, {"rotation_params", 2}}),
                  "compression.rotation_params: rotation \"fixed\" has no θ");
  EXPECT_CONTAINS(error_of({{"method", "topk"}, {"rotation_params", 2}}),
                  "compression.rotation_params: only used with method \"mos\"");
  EXPECT_CONTAINS(error_of({{"method", "none"}, {"compress_final_layer", true}}),
                  "compression.compress_final_layer: only used with method \"mos\" or \"topk\" or \"quantize\" or \"drop\"");
}

}  // namespace
}  // namespace lowband::compress
