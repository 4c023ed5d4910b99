// Layouts no trainer runs and no estimate models are refused when the scenario
// loads (runtime/scenario/layout_check.h), so validate, sweep --dry-run, run and
// estimate all refuse them alike, naming the JSON path.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/scenario/load.h"

namespace lowband::test {
namespace {

const std::string kHetero = std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-selective.json";

struct BadLayout {
  bool hetero;                    // from hetero-selective.json, else the built-in default
  std::vector<std::string> sets;
  std::string path;               // the JSON path the error names
};

// Each layout run or estimate refused while validate accepted it.
const std::vector<BadLayout>& bad_layouts() {
  static const std::vector<BadLayout> cases = {
      {false, {"parallel.context=1", "parallel.data=3", "network.nodes=3", "training.batch_size=4"},
       "training.batch_size"},
      {true, {R"(parallel.data_sync={"method": "all_reduce"})"}, "parallel.replicas.2"},
      {true, {"model.layers=2"}, "parallel.replicas.2.pipeline"},
      {true, {R"(parallel.replicas.1={"context": 2, "nodes": [1, 2]})"}, "parallel.replicas.1.context"},
      {false, {"parallel.context=1", "parallel.data=2", "network.nodes=2", "training.batch_size=2",
               "compression.weight_sync=topk_grad"}, "compression.weight_sync"},
      {false, {"parallel.context=1", "parallel.pipeline=2", "model.tie_embeddings=true"}, "model.tie_embeddings"},
      // Stages with context ranks sync by any method, but not across data replicas.
      {false, {"parallel.context=2", "parallel.pipeline=2", "parallel.data=2", "network.nodes=8",
               "training.batch_size=4", "compression.weight_sync=topk_grad"}, "compression.weight_sync"},
  };
  return cases;
}

std::string load_error(const BadLayout& c) {
  try {
    if (c.hetero) load_scenario_file(kHetero, c.sets);
    else builtin_scenario("default", c.sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ScenarioLayout, LoadingRefusesWhatNoTrainerRuns) {
  for (const BadLayout& c : bad_layouts()) {
    SCOPED_TRACE(c.sets.back());
    const std::string e = load_error(c);
    EXPECT_NE(e.find(c.path + ": "), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

// Keys that would do nothing in their layout were accepted silently (issue 28):
// each is refused naming its own path, and the neighbour that uses it loads.
TEST(ScenarioLayout, KeysWithoutEffectAreRefused) {
  const std::vector<BadLayout> cases = {
      {false, {"compression.method=mos", "compression.k_ratio=0.5", "compression.v_ratio=0.5", "parallel.context=1"},
       "compression.method"},
      {false, {"compression.method=topk", "parallel.context=1"}, "compression.method"},
      {false, {"parallel.context=1", "parallel.pipeline=2", "model.tie_embeddings=false",
               "compression.weight_sync=sparse"}, "compression.weight_sync"},
      {false, {"parallel.context=1", "compression.weight_sync=lowrank_grad"}, "compression.weight_sync"},
      {false, {"compression.sync_every=4"}, "compression.sync_every"},
      {false, {"compression.weight_sync=all_reduce", "compression.sync_value_bits=4"}, "compression.sync_value_bits"},
      {false, {"compression.weight_sync=sparse", "compression.sync_value_bits=32"}, "compression.sync_value_bits"},
      {true, {"parallel.replicas.0.compress_boundaries=true"}, "parallel.replicas.0.compress_boundaries"},
      {true, {R"(compression.boundary={"method": "none"})"}, "parallel.replicas.2.compress_boundaries"},
  };
  for (const BadLayout& c : cases) {
    SCOPED_TRACE(c.sets.back());
    const std::string e = load_error(c);
    EXPECT_NE(e.find(c.path + ": "), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  for (const BadLayout& c : std::vector<BadLayout>{
           {false, {"compression.method=mos", "compression.k_ratio=0.5", "compression.v_ratio=0.5"}, ""},
           {false, {"compression.method=mos", "compression.ratio=0", "parallel.context=1"}, ""},  // ratio 0: none
           {false, {"compression.weight_sync=sparse", "compression.sync_every=4"}, ""},
           {false, {"compression.weight_sync=topk_grad", "compression.sync_value_bits=4"}, ""},
           {true, {"parallel.replicas.2.compress_boundaries=false"}, ""}}) {
    SCOPED_TRACE(c.sets.back());
    EXPECT_EQ(load_error(c), "");
  }
}

// The good layouts next to them still load.
TEST(ScenarioLayout, GoodNeighboursLoad) {
  EXPECT_NO_THROW(load_scenario_file(kHetero));
  EXPECT_NO_THROW(load_scenario_file(kHetero, {R"(parallel.replicas.1={"nodes": [1]})", "model.layers=4"}));
  EXPECT_NO_THROW(builtin_scenario("default", {"parallel.context=1", "parallel.data=2", "network.nodes=2",
                                               "training.batch_size=4"}));
  EXPECT_NO_THROW(builtin_scenario("default", {"parallel.context=1", "parallel.pipeline=2"}));
  EXPECT_NO_THROW(builtin_scenario("default", {"parallel.context=2", "parallel.pipeline=2"}));
  for (const char* sync : {"sparse", "sparse_grad", "topk_grad", "sparse_update", "lowrank_grad"})
    EXPECT_NO_THROW(builtin_scenario("default", {"parallel.context=2", "parallel.pipeline=2",
                                                 std::string("compression.weight_sync=") + sync}))
        << sync;
}

}  // namespace
}  // namespace lowband::test
