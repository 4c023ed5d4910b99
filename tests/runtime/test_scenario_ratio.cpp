// compression.ratio: one knob across methods, resolved when loading into the
// method's own keys (mos: k_ratio = v_ratio; topk: topk_fraction = 1 - ratio;
// 0: uncompressed whatever the method), so the resolved scenario has no "ratio"
// and loads back to the same scenario.
#include <gtest/gtest.h>

#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"

namespace lowband {
namespace {

Scenario with(const std::vector<std::string>& sets) { return builtin_scenario("default", sets); }

void expect_round_trip(const Scenario& s) {
  const nlohmann::json resolved = to_json(s);
  EXPECT_FALSE(resolved.at("compression").contains("ratio")) << resolved.at("compression").dump();
  EXPECT_EQ(scenario_difference(parse_scenario(resolved, "resolved"), s), "");
}

std::string error_of(const std::vector<std::string>& sets) {
  try {
    with(sets);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(CompressionRatio, MosSetsBothRatios) {
  const Scenario s = with({"compression.method=mos", "compression.ratio=0.9"});
  EXPECT_EQ(s.compression.method, CompressionMethod::mos);
  EXPECT_EQ(s.compression.k_ratio, 0.9);
  EXPECT_EQ(s.compression.v_ratio, 0.9);
  EXPECT_EQ(s.compression.k_rank(64), 6);  // round(64 * 0.1)
  expect_round_trip(s);
}

TEST(CompressionRatio, TopkKeepsOneMinusRatio) {
  const Scenario s = with({"compression.method=topk", "compression.ratio=0.75"});
  EXPECT_EQ(s.compression.method, CompressionMethod::topk);
  EXPECT_DOUBLE_EQ(s.compression.topk_fraction, 0.25);
  expect_round_trip(s);
}

TEST(CompressionRatio, ZeroIsUncompressedWhateverTheMethod) {
  for (const char* method : {"mos", "topk", "quantize", "none"}) {
    const Scenario s = with({std::string("compression.method=") + method, "compression.ratio=0",
                             "compression.warmup_steps=7"});
    EXPECT_EQ(s.compression.method, CompressionMethod::none) << method;
    EXPECT_EQ(s.compression.warmup_steps, 7) << method;  // the keys every method shares stay
    expect_round_trip(s);
  }
  // mos's own keys are dropped: the same scenario as method none.
  const Scenario mos0 = with({"compression.method=mos", "compression.ratio=0", "compression.rotation=fixed"});
  EXPECT_EQ(scenario_difference(mos0, with({"compression.method=none"})), "");
}

TEST(CompressionRatio, ErrorsNameTheKey) {
  EXPECT_CONTAINS(error_of({"compression.ratio=0.5"}),
                  "--set compression.ratio=0.5: compression.ratio: method \"none\" has no ratio to set");
  EXPECT_CONTAINS(error_of({"compression.method=quantize", "compression.ratio=0.5"}),
                  "compression.ratio: method \"quantize\" has no ratio to set");
  EXPECT_CONTAINS(error_of({"compression.method=mos", "compression.k_ratio=0.5", "compression.ratio=0.5"}),
                  "compression.k_ratio: give ratio or k_ratio, not both");
  EXPECT_CONTAINS(error_of({"compression.method=mos", "compression.ratio=0.5", "compression.v_rank=2"}),
                  "compression.v_rank: give ratio or v_rank, not both");
  EXPECT_CONTAINS(error_of({"compression.method=topk", "compression.ratio=0.5", "compression.topk_fraction=0.2"}),
                  "compression.topk_fraction: give ratio or topk_fraction, not both");
  EXPECT_CONTAINS(error_of({"compression.method=mos", "compression.ratio=1"}), "compression.ratio: expected a number in [0, 1)");
}

TEST(CompressionRatio, ASweepSectionIsNotAScenario) {
  nlohmann::json doc = nlohmann::json::parse(builtin_scenario_text("default"));
  doc["sweep"] = {{"network.bandwidth", {"80Mbps", "1Gbps"}}};
  try {
    parse_scenario(doc, "grid.json");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "grid.json: sweep: a sweep section makes this file a grid of scenarios");
    EXPECT_CONTAINS(std::string(e.what()), "lowband sweep FILE");
  }
}

}  // namespace
}  // namespace lowband
