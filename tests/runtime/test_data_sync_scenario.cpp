// parallel.data_sync (runtime/scenario/parse_data_sync.cpp): defaults per method,
// the resolved scenario round trip, differences named by key, and bad input
// named by its JSON path.
#include <gtest/gtest.h>

#include "common/error.h"
#include "runtime/scenario/equal.h"
#include "runtime/scenario/load.h"

namespace lowband {
namespace {

// Four replicas of one rank each, on the built-in's 4 nodes: a data_sync method
// other than all_reduce needs replicas.
Scenario with(const std::string& data_sync) {
  return builtin_scenario("default", {"parallel.context=1", "parallel.data=4", "training.batch_size=4",
                                      "parallel.data_sync=" + data_sync});
}

std::string error_of(const std::string& data_sync) {
  try {
    with(data_sync);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << data_sync;
  return "";
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(DataSyncScenario, DefaultsPerMethod) {
  const DataSyncConfig none = builtin_scenario("default").parallel.data_sync;
  EXPECT_EQ(none.method, DataSyncMethod::all_reduce);
  const DataSyncConfig d = with(R"({"method": "diloco"})").parallel.data_sync;
  EXPECT_EQ(d.method, DataSyncMethod::diloco);
  EXPECT_EQ(d.inner_steps, 30);
  EXPECT_EQ(d.outer_lr, 0.7);
  EXPECT_EQ(d.outer_momentum, 0.9);
  const DataSyncConfig s = with(R"({"method": "sparseloco"})").parallel.data_sync;
  EXPECT_EQ(s.method, DataSyncMethod::sparseloco);
  EXPECT_EQ(s.outer_lr, 1.0);
  EXPECT_EQ(s.topk_per_chunk, 64);
  EXPECT_EQ(s.chunk, 4096);
  EXPECT_EQ(s.value_bits, 2);
  EXPECT_EQ(s.error_decay, 0.95);
  EXPECT_EQ(s.average, SparseAverage::all);
  const DataSyncConfig t = with(R"({"method": "sparseloco", "inner_steps": 15, "outer_lr": 0.6, "topk_per_chunk": 32,
                                    "chunk": 1024, "value_bits": 32, "error_decay": 0, "average": "chosen"})")
                               .parallel.data_sync;
  EXPECT_EQ(t.inner_steps, 15);
  EXPECT_EQ(t.outer_lr, 0.6);
  EXPECT_EQ(t.topk_per_chunk, 32);
  EXPECT_EQ(t.chunk, 1024);
  EXPECT_EQ(t.value_bits, 32);
  EXPECT_EQ(t.error_decay, 0.0);
  EXPECT_EQ(t.average, SparseAverage::chosen);
  EXPECT_EQ(s.exchange, DataSyncExchange::all_gather);
  EXPECT_EQ(s.relay_node, -1);
}

// The relay is a node of the network no rank runs on: the last one unless
// relay_node says which; its link is the topology's (here a star override).
TEST(DataSyncScenario, RelayExchangeSitsOnANodeOfItsOwn) {
  const DataSyncConfig last =
      builtin_scenario("default", {"parallel.context=1", "parallel.data=2", "training.batch_size=2", R"(parallel.data_sync={"method": "sparseloco", "exchange": "relay"})"})
          .parallel.data_sync;
  EXPECT_EQ(last.exchange, DataSyncExchange::relay);
  EXPECT_EQ(last.relay_node, 3);  // the built-in's 4 nodes, two ranks
  const Scenario s = builtin_scenario("default", {"parallel.context=1", "parallel.data=2", "training.batch_size=2",
                                                  R"(parallel.data_sync={"method": "sparseloco", "exchange": "relay",
                                                   "relay_node": 2})",
                                                  R"(network.overrides=[{"node": 2, "bandwidth": "10Gbps"}])"});
  EXPECT_EQ(s.parallel.data_sync.relay_node, 2);
  const Scenario back = parse_scenario(to_json(s), "resolved");
  EXPECT_EQ(scenario_difference(s, back), "");
  EXPECT_EQ(back.parallel.data_sync.exchange, DataSyncExchange::relay);
  auto one_rank = [](const std::string& data_sync) {
    return builtin_scenario("default", {"parallel.context=1", "parallel.data=2", "training.batch_size=2",
                                        "parallel.data_sync=" + data_sync});
  };
  EXPECT_EQ(scenario_difference(one_rank(R"({"method": "sparseloco"})"),
                                one_rank(R"({"method": "sparseloco", "exchange": "relay"})"))
                .rfind("parallel.data_sync.exchange:", 0),
            0u);
}

TEST(DataSyncScenario, ResolvedScenarioRoundTripsAndDifferencesNameTheKey) {
  for (const char* text : {R"({"method": "all_reduce"})", R"({"method": "diloco", "outer_momentum": 0.5})",
                           R"({"method": "sparseloco", "chunk": 256, "topk_per_chunk": 8, "average": "chosen"})"}) {
    const Scenario s = with(text);
    const Scenario back = parse_scenario(to_json(s), "resolved");
    EXPECT_EQ(scenario_difference(s, back), "") << text;
    EXPECT_EQ(back.parallel.data_sync.method, s.parallel.data_sync.method);
  }
  EXPECT_EQ(scenario_difference(with(R"({"method": "sparseloco"})"),
                                with(R"({"method": "sparseloco", "topk_per_chunk": 32})")),
            "parallel.data_sync.topk_per_chunk: 64 vs 32");
  EXPECT_EQ(scenario_difference(with(R"({"method": "diloco"})"), with(R"({"method": "sparseloco"})"))
                .rfind("parallel.data_sync.method:", 0),
            0u);
  EXPECT_EQ(scenario_difference(with(R"({"method": "sparseloco"})"), with(R"({"method": "sparseloco",
                                                                              "average": "chosen"})"))
                .rfind("parallel.data_sync.average:", 0),
            0u);
}

TEST(DataSyncScenario, BadInputNamesItsPath) {
  EXPECT_CONTAINS(error_of(R"({"method": "dilocco"})"), "parallel.data_sync.method");
  EXPECT_CONTAINS(error_of(R"({"method": "diloco", "inner_step": 3})"),
                  "unknown key \"inner_step\" at parallel.data_sync (did you mean \"inner_steps\"?)");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "outer_momentum": 0.9})"),
                  "parallel.data_sync.outer_momentum: only used with method \"diloco\", but method is \"sparseloco\"");
  EXPECT_CONTAINS(error_of(R"({"inner_steps": 30})"),
                  "parallel.data_sync.inner_steps: only used with method \"diloco\" or \"sparseloco\"");
  EXPECT_CONTAINS(error_of(R"({"method": "diloco", "topk_per_chunk": 8})"),
                  "parallel.data_sync.topk_per_chunk: only used with method \"sparseloco\"");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "chunk": 1000})"), "parallel.data_sync.chunk: 1000 is not a square");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "chunk": 8192})"), "parallel.data_sync.chunk");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "chunk": 16})"),
                  "parallel.data_sync.topk_per_chunk: 64 entries kept of a chunk of 16");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "value_bits": 16})"),
                  "parallel.data_sync.value_bits: expected 1..8 (2^bits bins) or 32");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "error_decay": 1.5})"), "parallel.data_sync.error_decay");
  EXPECT_CONTAINS(error_of(R"({"method": "diloco", "outer_lr": 0})"), "parallel.data_sync.outer_lr");
  EXPECT_CONTAINS(error_of(R"({"method": "diloco", "outer_momentum": 1})"), "parallel.data_sync.outer_momentum");
  EXPECT_CONTAINS(error_of(R"({"method": "diloco", "inner_steps": 0})"), "parallel.data_sync.inner_steps");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "average": "some"})"), "parallel.data_sync.average");
  // The relay: only for all-gathered messages, on a node of the network that runs no rank.
  EXPECT_CONTAINS(error_of(R"({"method": "diloco", "exchange": "relay"})"),
                  "parallel.data_sync.exchange: only used with method \"sparseloco\" (its messages are all-gathered), "
                  "but method is \"diloco\" (pseudo-gradients are all-reduced)");
  EXPECT_CONTAINS(error_of(R"({"exchange": "relay"})"), "method is \"all_reduce\" (gradients are all-reduced)");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "exchange": "store"})"), "parallel.data_sync.exchange");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "relay_node": 3})"),
                  "parallel.data_sync.relay_node: only used with exchange \"relay\"");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "exchange": "relay", "relay_node": 4})"),
                  "parallel.data_sync.relay_node: node 4, but the network has 4 nodes (0..3)");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "exchange": "relay", "relay_node": 0})"),
                  "parallel.data_sync.relay_node: node 0 runs rank 0: the relay needs a node no rank runs on "
                  "(network.nodes 4 for 4 ranks");
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "exchange": "relay", "relay_node": -1})"),
                  "parallel.data_sync.relay_node");
  // The default node, the last, runs a rank: the built-in's 4 context ranks on its 4 nodes.
  EXPECT_CONTAINS(error_of(R"({"method": "sparseloco", "exchange": "relay"})"),
                  "parallel.data_sync.relay_node: node 3 runs rank 3");
}

}  // namespace
}  // namespace lowband
