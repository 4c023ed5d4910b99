// Issue 28's bad inputs, class by class: each must end in exit 2, one line on
// stderr naming the place (a JSON path, a --set or another flag), and nothing
// written (docs/reliability.md). validate, sweep --dry-run, run and estimate all
// refuse a scenario the same way, so each is tried where it is cheap.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/scenario/load.h"
#include "tests/cli/cli_support.h"

namespace {

using lowband::test_support::Cli;
using lowband::test_support::CommandResult;

class BadInputCli : public Cli {
 protected:
  void expect_bad_input(const CommandResult& r, std::initializer_list<std::string> places) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    for (const std::string& place : places) EXPECT_NE(r.err.find(place), std::string::npos) << place << ": " << r.err;
  }
  // `set` refused by every command that reads a scenario, naming `--set SET` and `what`;
  // run leaves no directory and sweep --dry-run writes none.
  void expect_every_command_refuses(const std::string& set, const std::string& what,
                                    const std::string& builtin = "default") {
    const fs::path out = dir_ / "out";
    const std::string flag = "--set '" + set + "'";
    const std::string b = "--builtin " + builtin + " ";
    expect_bad_input(run("run " + b + "--steps 1 " + flag + " --out " + out.string()), {"--set " + set, what});
    EXPECT_FALSE(fs::exists(out)) << set;
    expect_bad_input(run("sweep " + b + "--dry-run " + flag + " --out " + out.string()), {"--set " + set, what});
    EXPECT_FALSE(fs::exists(out)) << set;
    expect_bad_input(run("estimate " + b + flag), {"--set " + set, what});
  }
};

// Class 1: a bandwidth or latency SimGrid cannot time crashed the replay (exit 1,
// a backtrace, a partial run directory); now refused at validation.
TEST_F(BadInputCli, LinksSimGridCannotTimeAreRefusedBeforeAnythingIsWritten) {
  for (const std::string set : {"network.bandwidth=1e-310bps", "network.bandwidth=1e-300bps",
                                "network.latency=1e-320s", "network.upload_bandwidth=1e-310bps",
                                "network.bandwidth=2000Tbps", "network.latency=2000s"})
    expect_every_command_refuses(set, "out of range");
  nlohmann::json d = nlohmann::json::parse(lowband::builtin_scenario_text("default"));
  const nlohmann::json link = {{"nodes", 2}, {"bandwidth", "1Gbps"}, {"latency", "1ms"}};
  d["network"] = {{"model", "ideal"}, {"topology", "clusters"}, {"clusters", {link, link}},
                  {"wan", {{"bandwidth", "1e-310bps"}, {"latency", "10ms"}}}};
  const auto p = write("wan.json", d.dump());
  expect_bad_input(run("validate " + p.string()), {p.string(), "network.wan.bandwidth", "out of range"});
}

// Class 2: network.simgrid was checked by SimGrid in the replay child, after the
// first step had trained and scenario.json, curve.csv and summary.json were written.
TEST_F(BadInputCli, SimgridSettingsAreCheckedBeforeAnythingTrains) {
  for (const std::string settings :
       {R"({"maxmin/precision": -1})", R"({"network/model": "NS3"})", R"({"cpu/model": "nope"})",
        R"({"network/bandwidth-factor": 0})", R"({"network/latency-factor": -5})", R"({"no/such-key": 1})"}) {
    const std::string key = settings.substr(2, settings.find('"', 2) - 2);
    expect_every_command_refuses("network.simgrid=" + settings, "network.simgrid." + key);
  }
}

// Keys that would do nothing are refused with the reason: validation_fraction 0
// with evaluations (nothing held out), validation_fraction with the recall task
// (it validates on a stream of its own).
TEST_F(BadInputCli, KeysThatWouldDoNothingAreRefused) {
  expect_every_command_refuses("training.validation_fraction=0",
                               "training.eval_every: validation_fraction is 0: nothing is held out");
  nlohmann::json recall = nlohmann::json::parse(
      lowband::test_support::slurp(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/long-range/long-range-recall.json"));
  recall["training"]["validation_fraction"] = 0.2;
  const std::string file = write("recall.json", recall.dump()).string();
  const fs::path out = dir_ / "out";
  for (const std::string& command : {"validate " + file, "estimate " + file, "run " + file + " --steps 1 --out " + out.string()}) {
    const auto r = run(command);
    expect_bad_input(r, {"training.validation_fraction", "data_source \"recall\" generates its validation records"});
    EXPECT_FALSE(fs::exists(out)) << command;
  }
}

// A projected run's step times come from projection.scenario's estimate: a
// changing network beside it would be recorded and never replayed.
TEST_F(BadInputCli, ChangingNetworksWithProjectionAreRefused) {
  nlohmann::json d = nlohmann::json::parse(
      lowband::test_support::slurp(std::string(LOWBAND_SOURCE_DIR) + "/scenarios/quickstart-changing-network.json"));
  d["projection"] = {{"scenario", "default"}};
  const std::string file = write("projected.json", d.dump()).string();
  const fs::path out = dir_ / "out";
  for (const std::string& command : {"validate " + file, "estimate " + file, "run " + file + " --steps 1 --out " + out.string()}) {
    expect_bad_input(run(command), {"network.dynamics: given with projection", "replays no changing network"});
    EXPECT_FALSE(fs::exists(out)) << command;
  }
}

// A refused --also-time-on target leaves nothing: not the run directory, nor the
// parents --out would have needed (they used to stay behind, empty).
TEST_F(BadInputCli, ARefusedRetimeTargetLeavesNoDirectory) {
  nlohmann::json other = nlohmann::json::parse(lowband::builtin_scenario_text("default"));
  other["name"] = "other";
  other["model"]["layers"] = 1;  // trains differently: not a retime target
  const std::string target = write("other.json", other.dump()).string();
  const fs::path out = dir_ / "a" / "b" / "out";
  expect_bad_input(run("run --builtin default --steps 1 --out " + out.string() + " --also-time-on " + target),
                   {"retime target 0 (other)", "model.layers"});
  EXPECT_FALSE(fs::exists(dir_ / "a"));
}

// network.dynamics is checked, and its trace files read, before anything runs.
TEST_F(BadInputCli, NetworkDynamicsAreCheckedBeforeAnythingRuns) {
  expect_every_command_refuses(R"(network.dynamics=[{"bandwidth": {"steps": [["1h", 0]]}}])",
                               "network.dynamics.0.bandwidth.steps.0.1: a bandwidth factor of 0 is refused");
  // A node down for good: refused by every command alike, before any step (it used to be found by
  // the replay, after run had written a whole run directory, at a step that depended on the command).
  expect_every_command_refuses(R"(network.dynamics=[{"node": 1, "state": {"steps": [["1s", 0]]}}])",
                               "network.dynamics.0.state.steps: the trace ends down (0 from 1 s on)");
  expect_every_command_refuses(R"(network.dynamics=[{"node": 9, "state": {"outages": {"seed": 1}}}])",
                               "network.dynamics.0.node: node 9 is out of range");
  expect_every_command_refuses(R"(network.dynamics=[{"state": {"file": "/nonexistent/trace.txt"}}])",
                               "network.dynamics.0.state.file: no such trace file \"/nonexistent/trace.txt\"");
  // A trace file's bad line, named by file and line, from a scenario file beside it.
  write("trace.txt", "# seconds factor\n0 1\n3600 0.5\n7200 half\n");
  nlohmann::json d = nlohmann::json::parse(lowband::builtin_scenario_text("default"));
  d["network"]["dynamics"] = {{{"node", 1}, {"bandwidth", {{"file", "trace.txt"}}}}};
  const auto p = write("dynamic.json", d.dump());
  expect_bad_input(run("validate " + p.string()),
                   {p.string(), "network.dynamics.0.bandwidth.file", (dir_ / "trace.txt").string() + ":4: expected \"seconds value\""});
  const fs::path out = dir_ / "out";
  expect_bad_input(run("run " + p.string() + " --steps 1 --out " + out.string()), {"trace.txt:4"});
  EXPECT_FALSE(fs::exists(out));
  // Fixed, it validates.
  write("trace.txt", "# seconds factor\n0 1\n3600 0.5\n7200 1\n");
  const auto ok = run("validate " + p.string());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// A long outage with a short watchdog relaunched the run once per timeout, one
// SimGrid child each (10^5 of them in 5 minutes; an outage of 1e9 s never ended).
// The relaunches an outage implies are bounded when the scenario is read, by
// every command; a sweep with one such point on its network axis writes nothing.
TEST_F(BadInputCli, AnOutageThatWouldRelaunchWithoutEndIsRefusedByEveryCommand) {
  nlohmann::json d = nlohmann::json::parse(lowband::builtin_scenario_text("default"));
  d["network"]["dynamics"] = nlohmann::json::parse(R"([{"node": 1, "state": {"steps": [["1s", 0], ["1e9s", 1]]}}])");
  d["network"]["restart"] = {{"stall_timeout", "1s"}, {"relaunch", "0s"}};
  const std::string file = write("storm.json", d.dump()).string();
  const fs::path out = dir_ / "out";
  const std::string what = "network.restart: an outage of 1e+09 s (network.dynamics.0) would relaunch the run";
  for (const std::string& command : {"validate " + file, "estimate " + file + " --steps 3",
                                     "run " + file + " --steps 1 --out " + out.string(),
                                     "sweep " + file + " --dry-run --out " + out.string()}) {
    expect_bad_input(run(command), {what});
    EXPECT_FALSE(fs::exists(out)) << command;
  }
  expect_bad_input(run("sweep " + file + " --set 'network.restart={\"stall_timeout\": \"1e8s\", \"relaunch\": 0},"
                       "{\"stall_timeout\": \"1s\", \"relaunch\": 0}' --set training.steps=1 --out " + out.string()),
                   {"at point", "network.restart: an outage of", "would relaunch the run"});
  EXPECT_FALSE(fs::exists(out));
}

// OMP_NUM_THREADS is read by OpenMP itself: an absurd count failed inside libgomp
// mid-run (exit 1, an empty run directory left behind).
TEST_F(BadInputCli, AbsurdOmpNumThreadsIsBadInput) {
  const fs::path out = dir_ / "out";
  for (const char* value : {"100000", "1,100000"}) {
    ::setenv("OMP_NUM_THREADS", value, 1);
    const auto r = run("run --builtin default --steps 1 --out " + out.string());
    ::unsetenv("OMP_NUM_THREADS");
    expect_bad_input(r, {"OMP_NUM_THREADS", value});
    EXPECT_FALSE(fs::exists(out)) << value;
  }
  // A value libgomp cannot read it reports itself (and ignores) before main: ours follows.
  ::setenv("OMP_NUM_THREADS", "four", 1);
  const auto bad = run("run --builtin default --steps 1 --out " + out.string());
  ::unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("lowband: error: OMP_NUM_THREADS:"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(out));
  ::setenv("OMP_NUM_THREADS", "1,1", 1);  // nested levels, each sane
  const auto ok = run("estimate --builtin default");
  ::unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// estimate --steps counts steps on a changing network; on a constant one it would do nothing.
TEST_F(BadInputCli, EstimateStepsNeedsAChangingNetwork) {
  expect_bad_input(run("estimate --builtin default --steps 10"), {"--steps", "network.dynamics"});
  expect_bad_input(run("estimate --builtin default --steps 0"), {"--steps", "1..1000000"});
  const auto ok = run(R"(estimate --builtin default --steps 10 --set 'network.dynamics=[{"node":1,"speed":{"steps":[[0,0.5]]}}]' --json)");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out).at("changing_network").at("steps"), 10);
}

// Class 4: keys that do nothing in their layout were accepted silently.
TEST_F(BadInputCli, KeysWithoutEffectAreRefusedEverywhere) {
  expect_every_command_refuses("parallel.context=1", "compression.method", "mos-paper-mos-300mbps");
  expect_every_command_refuses("compression.sync_every=4", "compression.sync_every");
  expect_every_command_refuses("compression.sync_value_bits=4", "compression.sync_value_bits");
}

// MoS's U₀ fitted before the learning rate's warm-up ends (mos-paper: 500 steps)
// is refused naming compression.warmup_steps, unless the scenario opts in.
TEST_F(BadInputCli, MosFitDuringTheLearningRateWarmUpNeedsTheOptIn) {
  expect_every_command_refuses("compression.warmup_steps=10", "compression.warmup_steps", "mos-paper-mos-300mbps");
  const CommandResult ok = run("estimate --builtin mos-paper-mos-300mbps --set compression.warmup_steps=10"
                               " --set compression.fit_during_lr_warmup=true");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Class 5: errors that named the wrong place, or said something untrue.
TEST_F(BadInputCli, ErrorsNameTheRightPlace) {
  const std::string hetero = std::string(LOWBAND_SOURCE_DIR) + "/scenarios/hetero-selective.json";
  expect_bad_input(run("estimate " + hetero + " --set parallel.replicas.01.pipeline=1"),
                   {"--set parallel.replicas.01.pipeline=1", "leading zeros"});
  for (const char* command : {"estimate --builtin default", "sweep --builtin default --dry-run"}) {
    const auto r = run(std::string(command) + " --set training.lr=1e309");
    expect_bad_input(r, {"--set training.lr=1e309: training.lr: number out of range"});
    EXPECT_EQ(r.err.find("top level"), std::string::npos) << r.err;
  }
  expect_bad_input(run("sweep --builtin default --dry-run --set training.lr=0.1,1e309"),
                   {"--set training.lr=0.1,1e309: training.lr: number out of range"});
  nlohmann::json d = nlohmann::json::parse(lowband::builtin_scenario_text("default"));
  d["training"]["seed"] = 123456789;
  std::string text = d.dump();
  const auto p = write("seed.json", text.replace(text.find("123456789"), 9, "-0"));
  const auto ok = run("validate " + p.string());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  expect_bad_input(run("estimate " + hetero + R"( --set 'parallel.replicas.1={"context": 2, "nodes": [1, 2], )"
                       R"("compress_boundaries": true}')"),
                   {"parallel.replicas.1.context: context 2, but replica 0 has context 1"});
}

// --steps meant two things: run kept training.steps (the schedule's length and
// scenario.json's), sweep set it, so "the same" 3 steps differed. Both set it now.
TEST_F(BadInputCli, RunAndSweepStepsAreTheSameSteps) {
  const std::string tiny =
      " --builtin default --set model.layers=2 --set model.d_model=32 --set model.heads=4 --set model.kv_heads=2"
      " --set model.ffn_hidden=64 --set model.seq_len=64 --set devices.timing=profile --set training.lr_warmup_steps=1"
      " --set training.eval_every=0 --threads 1 --steps 3";
  const auto r = run("run" + tiny + " --out " + (dir_ / "run").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = run("sweep" + tiny + " --jobs 1 --out " + (dir_ / "sweep").string());
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const auto recorded = nlohmann::json::parse(lowband::test_support::slurp(dir_ / "run" / "scenario.json"));
  EXPECT_EQ(recorded["training"]["steps"], 3);
  fs::path point;
  for (const auto& e : fs::directory_iterator(dir_ / "sweep"))
    if (fs::exists(e.path() / "steps.jsonl")) point = e.path();
  ASSERT_FALSE(point.empty());
  EXPECT_EQ(lowband::test_support::slurp(point / "scenario.json"), lowband::test_support::slurp(dir_ / "run" / "scenario.json"));
  std::ifstream a(dir_ / "run" / "steps.jsonl"), b(point / "steps.jsonl");
  int lines = 0;
  for (std::string la, lb; std::getline(a, la) && std::getline(b, lb); ++lines)
    EXPECT_EQ(nlohmann::json::parse(la)["train_loss"], nlohmann::json::parse(lb)["train_loss"]) << "step " << lines;
  EXPECT_EQ(lines, 3);
  // Resuming keeps the run's count: another --steps is refused naming it.
  expect_bad_input(run("run --resume " + (dir_ / "run").string() + " --steps 5"), {"--steps"});
}

// A path that is a symlink loop was an internal error (exit 1) where a command
// asked the file system about it: now exit 2 naming it. So is a name too long
// for the file system (fuzz_cli_flags accepts both as main reports them).
TEST_F(BadInputCli, ASymlinkLoopIsBadInputNamingThePath) {
  const fs::path loop = dir_ / "loop", too_long = dir_ / std::string(300, 'a');
  fs::create_symlink(loop, loop);
  for (const fs::path& path : {loop, too_long})
    for (const std::string command : {"validate", "report", "plot", "run --resume", "sweep --resume"}) {
      const auto r = run(command + " " + path.string());
      expect_bad_input(r, {path.string()});
      EXPECT_EQ(r.err.find("internal error"), std::string::npos) << command << ": " << r.err;
    }
  expect_bad_input(run("run --builtin default --steps 1 --set training.data=" + loop.string() + " --out " +
                       (dir_ / "out").string()),
                   {"training.data", loop.string()});
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

// Class 3: flags without bounds, and flag values read as "not given".
TEST_F(BadInputCli, FlagsWithoutBoundsAreRefusedNamingTheFlag) {
  const fs::path out = dir_ / "out";
  for (const char* threads : {"100000", "4096", "0"}) {
    expect_bad_input(run(std::string("run --builtin default --steps 1 --threads ") + threads + " --out " + out.string()),
                     {"--threads", "4 x this machine's"});
    EXPECT_FALSE(fs::exists(out));
    expect_bad_input(run(std::string("sweep --builtin default --dry-run --threads ") + threads), {"--threads"});
    expect_bad_input(run(std::string("sweep --builtin default --dry-run --jobs ") + threads), {"--jobs"});
  }
  expect_bad_input(run("bench-comm --builtin default --transport in-process --ranks 2048"), {"--ranks", "got 2048"});
  expect_bad_input(run("bench-comm --builtin default --transport in-process --ranks 2 --iters 0"), {"--iters", "got 0"});
  expect_bad_input(run("bench-comm --builtin default --iters 3"), {"--iters", "--transport"});
  expect_bad_input(run("bench-comm --builtin default --sizes 0B"), {"--sizes", "\"0B\""});
  expect_bad_input(run("bench-comm --builtin default --transport in-process --ranks 2 --sizes 1KB,0B"), {"--sizes", "\"0B\""});
  expect_bad_input(run("bench-comm --builtin default --transport in-process --ranks 2 --sizes 2B"), {"--sizes", "float32"});
  for (const char* target : {"-1", "0", "nan", "inf"}) {
    expect_bad_input(run(std::string("report ") + dir_.string() + " --target-loss " + target), {"--target-loss"});
    expect_bad_input(run(std::string("plot ") + dir_.string() + " --target-loss " + target), {"--target-loss"});
  }
  expect_bad_input(run("plot " + dir_.string() + " --curves sometimes"), {"--curves", "sometimes"});
  expect_bad_input(run("bench-comm --builtin default --per-call"), {"--per-call", "--transport"});
  for (const char* command : {"run", "estimate", "sweep --dry-run", "bench-comm"})
    expect_bad_input(run(std::string(command) + " --builtin nope"), {"--builtin", "no built-in scenario named \"nope\""});
}

// A grid is planned whole (one parsed scenario per point) before anything runs:
// three axes of 50 values planned 125,000 points (5.4 s, 514 MB), four would be
// 6.25 M (~25 GB). Past grid::kMaxSweepPoints the axis that crosses it is named.
TEST_F(BadInputCli, GridsPastTheirLimitNameTheAxis) {
  std::string values;
  for (int i = 1; i <= 50; ++i) values += (i > 1 ? "," : "") + std::to_string(i);
  const std::string axes = " --set training.seed=" + values + " --set training.eval_every=" + values +
                           " --set training.steps=" + values;
  const fs::path out = dir_ / "out";
  for (const std::string& command : {"sweep --builtin default --dry-run --out " + out.string(), std::string("estimate --builtin default")}) {
    expect_bad_input(run(command + axes), {"--set training.steps=1,2,", "more than 100000 points"});
    EXPECT_FALSE(fs::exists(out));
  }
  // A --set that is not UTF-8 (fuzz_sweep_grid's first find: the point's name and
  // record are JSON, and writing them ended in an internal error, exit 1).
  for (const char* command : {"sweep --builtin default --dry-run", "estimate --builtin default"})
    expect_bad_input(run(std::string(command) + " --set \"$(printf 'compression.method=no\\201ne,mos')\""), {"--set", "not valid UTF-8"});
  // The same in one scenario's --set, where a value that is not JSON stays text: an
  // error message quoting it aborted the process (fuzz_scenario, 2026-12-07).
  const fs::path run_out = dir_ / "out";
  for (const char* set : {"network.dynamics=\\201", "training.lr=\\377x", "netw\\301ork.bandwidth=1Gbps"}) {
    expect_bad_input(run("run --builtin default --steps 1 --out " + run_out.string() + " --set \"$(printf '" + set + "')\""),
                     {"--set", "not valid UTF-8"});
    EXPECT_FALSE(fs::exists(run_out)) << set;
  }
  // Two of those axes (2,500 points) plan.
  EXPECT_EQ(run("sweep --builtin default --dry-run --set training.seed=" + values + " --set training.eval_every=" + values).exit_code, 0);
}

// An empty value was read as "not given": `run --out ''` wrote runs/quickstart-*,
// `validate ''` named no place.
TEST_F(BadInputCli, EmptyFlagValuesAreRefused) {
  for (const std::string& command : std::vector<std::string>{"run --builtin default --steps 1", "estimate --builtin default --json",
                                    "sweep --builtin default --dry-run", "report " + dir_.string()})
    for (const char* flag : {" --out ''", " --out="}) {
      const std::string c = command + flag;
      expect_bad_input(run(c), {"--out", "an empty value"});
    }
  expect_bad_input(run("validate ''"), {"argument 2", "an empty value"});
  expect_bad_input(run("run ''"), {"argument 2", "an empty value"});
  expect_bad_input(run("run --builtin default --set ''"), {"--set", "an empty value"});
  // Run where the default run directory would go: nothing appears there.
  const fs::path here = dir_ / "here";
  fs::create_directories(here);
  const int status = std::system(("cd " + here.string() + " && " + LOWBAND_BINARY +
                                  " run --builtin default --steps 1 --out '' >/dev/null 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_TRUE(fs::is_empty(here));
}

// A scenario path that is no regular file is refused by name, unread: a fifo would
// wait for a writer forever (bench-comm opened its file before asking), /dev/zero never ends.
TEST_F(BadInputCli, AScenarioThatIsNotARegularFileIsRefusedUnread) {
  const fs::path fifo = dir_ / "fifo", out = dir_ / "out";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::string> commands = {"validate", "estimate", "sweep --dry-run", "bench-comm",
                                             "run --steps 1 --out " + out.string()};
  for (const std::string& path : {std::string("/dev/zero"), fifo.string(), dir_.string()})
    for (const std::string& command : commands) expect_bad_input(run(command + " " + path), {path, "not a regular file"});
  EXPECT_FALSE(fs::exists(out));
}

// bench-comm read a network-only file and dropped --builtin without a word.
TEST_F(BadInputCli, BenchCommTakesAFileOrABuiltinNotBoth) {
  const fs::path net = write("net.json", R"({"network": {"model": "tcp", "topology": "star", "nodes": 3,
      "bandwidth": "1Gbps", "latency": "1ms"}})");
  expect_bad_input(run("bench-comm " + net.string() + " --builtin default"), {"--builtin", "not both"});
}

}  // namespace
