#pragma once
// Shared by the resume tests: a tiny scenario with deterministic (profile) timing,
// and the comparison of two run directories' numerics (everything but wall-clock
// figures and the directory names).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/scenario/load.h"
#include "tests/runtime/test_run_support.h"

extern char** environ;

namespace lowband::train::test {

// Starts `lowband ARGS...` with stdout and stderr to the files `out` and `err`, and
// `env` set over this process's environment; returns its pid. `in_child` runs in the
// child before exec (to set a resource limit, say).
inline pid_t start_lowband(std::vector<std::string> args, const std::map<std::string, std::string>& env,
                           const std::string& out, const std::string& err,
                           const std::function<void()>& in_child = {}) {
  args.insert(args.begin(), LOWBAND_BINARY);
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    if (!env.count(var.substr(0, var.find('=')))) vars.push_back(var);
  }
  for (const auto& [name, value] : env) vars.push_back(name + "=" + value);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr)) _exit(127);
    if (in_child) in_child();
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// `lowband run ARGS...`, as start_lowband.
inline pid_t start_lowband_run(std::vector<std::string> args, const std::map<std::string, std::string>& env,
                               const std::string& out, const std::string& err) {
  args.insert(args.begin(), "run");
  return start_lowband(std::move(args), env, out, err);
}

// P = 2 ranks, 2 layers, d_model 32, seq 64, batch 2; 10 steps, evaluation every 3,
// a checkpoint every 4 steps, compute seconds from the device profile.
inline Scenario resume_tiny(std::vector<std::string> extra = {}) {
  std::vector<std::string> sets = {
      "model.layers=2",           "model.d_model=32",      "model.heads=4",       "model.kv_heads=2",
      "model.ffn_hidden=64",      "model.seq_len=64",      "parallel.context=2",  "network.nodes=4",
      "training.batch_size=2",    "training.lr=0.01",      "training.lr_warmup_steps=2", "training.steps=10",
      "training.eval_every=3",    "training.eval_batches=2", "training.checkpoint_every=4",
      "devices.timing=profile"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return builtin_scenario("default", sets);
}

// The command-line tests' tiny run: `--set KEY=VALUE` pairs for 2 ranks, 2 layers,
// d_model 32, seq 64, batch 2, `steps` steps, a checkpoint every 25, profile timing.
inline std::vector<std::string> tiny_run_args(int steps) {
  std::vector<std::string> args;
  for (const std::string& set :
       {std::string("model.layers=2"), std::string("model.d_model=32"), std::string("model.heads=4"),
        std::string("model.kv_heads=2"), std::string("model.ffn_hidden=64"), std::string("model.seq_len=64"),
        std::string("parallel.context=2"), std::string("network.nodes=2"), std::string("training.batch_size=2"),
        "training.steps=" + std::to_string(steps), std::string("training.eval_every=10"),
        std::string("training.eval_batches=2"), std::string("training.checkpoint_every=25"),
        std::string("devices.timing=profile")}) {
    args.push_back("--set");
    args.push_back(set);
  }
  return args;
}

// Figures that depend on the wall clock or on where the run lives.
inline nlohmann::json without_wall_figures(nlohmann::json j) {
  for (const char* key : {"wall_seconds", "record_wall_seconds", "replay_wall_seconds", "process_tokens_per_s",
                          "process_step_wall_seconds", "harness_overhead_fraction", "run_dir", "trained_in"})
    j.erase(key);
  return j;
}

// curve.csv without its wall_seconds column (the 4th).
inline std::vector<std::string> curve_without_wall(const fs::path& p) {
  std::vector<std::string> rows;
  std::istringstream in(slurp(p));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (cells.size() > 3) cells.erase(cells.begin() + 3);
    std::string row;
    for (const auto& c : cells) row += c + ",";
    rows.push_back(row);
  }
  return rows;
}

// The run in `got` has, step for step, the numbers of the run in `want`: every
// steps.jsonl field but wall-clock ones equal as parsed doubles (JSON numbers are
// written with round-trip precision, so equal means bit for bit), step numbers
// 1..steps exactly once, the same curve.csv (but wall seconds) and summary.json.
inline void expect_same_numerics(const fs::path& want, const fs::path& got, int steps) {
  const auto a = read_jsonl(want / "steps.jsonl"), b = read_jsonl(got / "steps.jsonl");
  ASSERT_EQ(int(a.size()), steps);
  ASSERT_EQ(int(b.size()), steps) << got;
  for (int i = 0; i < steps; ++i) {
    EXPECT_EQ(b[size_t(i)].at("step").get<int>(), i + 1) << got;
    EXPECT_EQ(without_wall_figures(b[size_t(i)]), without_wall_figures(a[size_t(i)])) << "step " << i + 1;
  }
  EXPECT_EQ(curve_without_wall(got / "curve.csv"), curve_without_wall(want / "curve.csv"));
  EXPECT_EQ(without_wall_figures(nlohmann::json::parse(slurp(got / "summary.json"))),
            without_wall_figures(nlohmann::json::parse(slurp(want / "summary.json"))));
}

}  // namespace lowband::train::test
