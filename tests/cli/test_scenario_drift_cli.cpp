// End to end, what the resolved scenario.json holds is what `run --resume` and
// `--also-time-on` compare: a replica that changed is refused (exit 2, naming
// it), and a key the resolved scenario leaves out (compression.ratio, resolved
// into the method's own keys) does not make the run's own scenario "another".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "runtime/scenario/load.h"
#include "tests/cli/cli_support.h"

namespace {

using lowband::test_support::Cli;
using lowband::test_support::slurp;

const std::string kTiny =
    " --set model.layers=2 --set model.d_model=32 --set model.heads=4 --set model.kv_heads=2"
    " --set model.ffn_hidden=64 --set model.seq_len=64 --set devices.timing=profile --set training.steps=2"
    " --set training.checkpoint_every=1 --set training.eval_every=0 --threads 1";
// Three DiLoCo replicas on nodes 0..3: 1, 1 and 2 stages, or 1, 2 and 1.
const std::string kReplicas =
    " --set network.nodes=4 --set parallel.context=1 --set training.batch_size=3"
    " --set 'parallel.data_sync={\"method\":\"diloco\",\"inner_steps\":1}'"
    " --set 'parallel.replicas=[{\"nodes\":[0]},{\"nodes\":[1]},{\"pipeline\":2,\"nodes\":[2,3]}]'";
const std::string kOtherReplicas =
    " --set 'parallel.replicas=[{\"nodes\":[0]},{\"pipeline\":2,\"nodes\":[1,2]},{\"nodes\":[3]}]'";

using ScenarioDriftCli = Cli;

TEST_F(ScenarioDriftCli, ResumingWithTheRunsOwnScenarioWorks) {
  const std::string out = (dir_ / "run").string();
  const auto first = run("run" + kTiny + " --set compression.method=topk --set compression.ratio=0.5 --out " + out);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // The scenario named again (the --sets on the recorded scenario.json would meet its topk_fraction).
  const auto again = run("run --resume " + out + " --builtin default" + kTiny +
                         " --set compression.method=topk --set compression.ratio=0.5");
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
}

TEST_F(ScenarioDriftCli, ResumingWithOtherReplicasIsRefused) {
  const std::string out = (dir_ / "run").string();
  const auto first = run("run" + kTiny + kReplicas + " --out " + out);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string steps = slurp(dir_ / "run" / "steps.jsonl");
  const auto again = run("run --resume " + out + kTiny + kReplicas + kOtherReplicas);
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find("parallel.replicas.1."), std::string::npos) << again.err;
  EXPECT_EQ(slurp(dir_ / "run" / "steps.jsonl"), steps);
}

TEST_F(ScenarioDriftCli, AlsoTimeOnRefusesOtherReplicas) {
  // Both scenarios as files (the run's --sets would apply to the other one too).
  const auto file = [&](const std::string& name, const std::string& replicas) {
    nlohmann::json doc = nlohmann::json::parse(lowband::builtin_scenario_text("default"));
    lowband::apply_overrides(doc, {"name=" + name, "model.layers=2", "model.d_model=32", "model.heads=4",
                                   "model.kv_heads=2", "model.ffn_hidden=64", "model.seq_len=64",
                                   "devices.timing=profile", "training.steps=1", "network.nodes=4",
                                   "parallel.context=1", "training.batch_size=3",
                                   R"(parallel.data_sync={"method":"diloco","inner_steps":1})",
                                   "parallel.replicas=" + replicas});
    return write(name + ".json", doc.dump(2)).string();
  };
  const std::string base = file("base", R"([{"nodes":[0]},{"nodes":[1]},{"pipeline":2,"nodes":[2,3]}])");
  const std::string other = file("other", R"([{"nodes":[0]},{"pipeline":2,"nodes":[1,2]},{"nodes":[3]}])");
  const auto r = run("run " + base + " --threads 1 --also-time-on " + other + " --out " + (dir_ / "base").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("parallel.replicas.1."), std::string::npos) << r.err;
}

// A sweep run again skips the points it finished, and only those: the run's own
// compression.ratio is the same point; a replica compressed now is another.
TEST_F(ScenarioDriftCli, ASweepRunAgainSkipsExactlyTheSamePoints) {
  const std::string out = " --out " + (dir_ / "sweep").string();
  const std::string points = " --set compression.method=topk --set compression.ratio=0.5 --set training.seed=1,2";
  const auto first = run("sweep" + kTiny + points + out);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto again = run("sweep" + kTiny + points + out);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("(2 points already done)"), std::string::npos) << again.out;

  // compress_boundaries needs a boundary codec (with none it would do nothing, and is refused).
  const std::string replicas = " --out " + (dir_ / "replicas").string() + kReplicas +
                               " --set 'compression.boundary={\"method\":\"lowrank\",\"rank\":8}'";
  const auto plain = run("sweep" + kTiny + replicas + " --set parallel.replicas.2.compress_boundaries=false");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto compressed = run("sweep" + kTiny + replicas + " --set parallel.replicas.2.compress_boundaries=true");
  EXPECT_EQ(compressed.exit_code, 0) << compressed.err;
  EXPECT_EQ(compressed.out.find("already done"), std::string::npos) << compressed.out << compressed.err;
}

}  // namespace
