// `mpirun -np P lowband run`: one context-parallel rank (or pipeline stage, or
// stage's context rank) per process, over Open MPI, must train exactly what the in-process ranks train. With profile timing
// the simulated step times match too, so the graph assembled on rank 0 from the
// gathered logs is the in-process one. Compared bit for bit: every reduction sums
// in the same (ring) order in both transports (comm/communicator.h).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;

namespace {

const char* kTiny =
    " --set model.layers=2 --set model.d_model=32 --set model.heads=4 --set model.kv_heads=2"
    " --set model.ffn_hidden=64 --set model.seq_len=64 --set network.nodes=8 --set training.batch_size=2"
    " --set training.eval_every=3 --set devices.timing=profile --steps 6";

std::vector<nlohmann::json> steps_of(const fs::path& dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(dir / "steps.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// Two runs' steps.jsonl hold the same training, bit for bit; with `timing`, the
// same bytes per rank and simulated step seconds too.
void expect_same_steps(const fs::path& expected, const fs::path& got, bool timing) {
  const auto a = steps_of(expected), b = steps_of(got);
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].at("train_loss").get<double>(), a[i].at("train_loss").get<double>()) << "step " << i;
    EXPECT_EQ(b[i].at("grad_norm").get<double>(), a[i].at("grad_norm").get<double>()) << "step " << i;
    EXPECT_EQ(b[i].value("val_loss", nlohmann::json()), a[i].value("val_loss", nlohmann::json())) << "step " << i;
    if (!timing) continue;
    EXPECT_EQ(b[i].at("bytes_sent_per_rank"), a[i].at("bytes_sent_per_rank")) << "step " << i;
    EXPECT_EQ(b[i].at("sim_step_seconds").get<double>(), a[i].at("sim_step_seconds").get<double>()) << "step " << i;
  }
}

int sh(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct MpiCase {
  int ranks;
  const char* sets;
  const char* transport = "mpi";  // nccl: one GPU per process, skipped where there are fewer
};

class MpiRun : public ::testing::TestWithParam<MpiCase> {
 protected:
  void SetUp() override { dir_ = lowband::test_support::unique_test_temp_dir("lowband_mpi_run"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_P(MpiRun, EqualsTheInProcessRanksBitForBit) {
  const MpiCase c = GetParam();
  const std::string transport = c.transport;
  if (transport == "nccl" && lowband::kernels::cuda::device_count() < c.ranks)
    GTEST_SKIP() << "NCCL over " << c.ranks << " processes needs as many GPUs; this machine has "
                 << lowband::kernels::cuda::device_count();
  const std::string args = std::string(kTiny) + " --set parallel.context=" + std::to_string(c.ranks) + c.sets;
  const std::string log = " >" + (dir_ / "log").string() + " 2>&1";
  ASSERT_EQ(sh(std::string(LOWBAND_BINARY) + " run" + args + " --out " + (dir_ / "in_process").string() + log), 0);
  ASSERT_EQ(sh(std::string(LOWBAND_MPIEXEC) + " --oversubscribe --allow-run-as-root -np " + std::to_string(c.ranks) +
               " " + LOWBAND_BINARY + " run" + args + " --transport " + transport + " --out " +
               (dir_ / "mpi").string() + log),
            0)
      << std::ifstream(dir_ / "log").rdbuf();
  expect_same_steps(dir_ / "in_process", dir_ / "mpi", /*timing=*/true);
  // Rank 0 alone wrote: one line per step, no second writer.
  EXPECT_FALSE(fs::exists(dir_ / "mpi" / "rank1"));
}

// Only rank 0 checks the run directory: when it fails alone, the job must end
// with its exit status instead of leaving rank 1 waiting in a collective.
TEST(MpiRunErrors, ARankFailingAloneEndsTheJobWithItsStatus) {
  const fs::path dir = lowband::test_support::unique_test_temp_dir("lowband_mpi_run_error");
  std::ofstream(dir / "checkpoint.bin") << "x";  // "already holds a run": rank 0 alone checks
  const int status = sh("timeout 120 " + std::string(LOWBAND_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 2 " +
                        LOWBAND_BINARY + " run" + kTiny + " --set parallel.context=2 --out " + dir.string() + " >" +
                        (dir / "log").string() + " 2>&1");
  EXPECT_EQ(status, 2) << std::ifstream(dir / "log").rdbuf();
  fs::remove_all(dir);
}

// A run stopped in-process after its checkpoint resumes under mpirun (each
// process takes its rank's part of the checkpoint) and ends as the
// uninterrupted run did, bit for bit.
TEST(MpiRunResume, AnInProcessCheckpointContinuesUnderMpi) {
  const fs::path dir = lowband::test_support::unique_test_temp_dir("lowband_mpi_resume");
  const std::vector<std::string> sets = {"model.layers=2", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                         "model.ffn_hidden=64", "model.seq_len=64", "network.nodes=8",
                                         "training.batch_size=2", "training.eval_every=3", "devices.timing=profile",
                                         "parallel.context=2", "training.checkpoint_every=3", "training.steps=6"};
  std::string args;
  for (const auto& s : sets) args += " --set " + s;
  ASSERT_EQ(sh(std::string(LOWBAND_BINARY) + " run" + args + " --out " + (dir / "straight").string() + " >/dev/null 2>&1"), 0);
  lowband::train::RunOptions stop;
  stop.out_dir = (dir / "resumed").string();
  stop.stop_after_steps = 4;  // a checkpoint at 3, one line past it
  lowband::train::run_training(lowband::builtin_scenario("default", sets), stop);
  ASSERT_EQ(sh(std::string(LOWBAND_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 2 " + LOWBAND_BINARY +
               " run --resume " + (dir / "resumed").string() + " >" + (dir / "log").string() + " 2>&1"),
            0)
      << std::ifstream(dir / "log").rdbuf();
  std::stringstream log;
  log << std::ifstream(dir / "log").rdbuf();
  EXPECT_NE(log.str().find("at step 3/6"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("one rank per MPI process"), std::string::npos) << log.str();
  expect_same_steps(dir / "straight", dir / "resumed", /*timing=*/false);
  fs::remove_all(dir);
}

// The same trainings with NCCL carrying the collectives (the CPU kernels train:
// this checks the communicator, bit for bit, not the GPU kernels).
INSTANTIATE_TEST_SUITE_P(
    Nccl, MpiRun,
    ::testing::Values(MpiCase{1, "", "nccl"},
                      MpiCase{2, " --set parallel.split=zigzag --set parallel.exchange=ring", "nccl"},
                      MpiCase{2, " --set parallel.context=1 --set parallel.data=2", "nccl"}),
    [](const auto& info) { return "P" + std::to_string(info.param.ranks) + "_" + std::to_string(info.index); });

INSTANTIATE_TEST_SUITE_P(
    Layouts, MpiRun,
    ::testing::Values(MpiCase{2, " --set parallel.split=zigzag --set parallel.exchange=ring"},
                      MpiCase{4, " --set parallel.split=contiguous --set parallel.exchange=all_gather"},
                      MpiCase{4, " --set parallel.split=zigzag --set parallel.exchange=ring"
                                 " --set compression.method=mos --set compression.k_ratio=0.5 --set compression.v_ratio=0.5"
                                 " --set compression.warmup_steps=2 --set compression.fit_during_lr_warmup=true"},
                      // Two sequences in flight per context rank: each slot's messages on tags of their own.
                      MpiCase{4, " --set parallel.split=zigzag --set parallel.exchange=ring"
                                 " --set parallel.microbatches=2 --set training.batch_size=4"},
                      // Pipeline stages, one per process (the later --set wins over parallel.context=P).
                      MpiCase{2, " --set parallel.context=1 --set parallel.pipeline=2 --set parallel.microbatches=2"
                                 " --set model.tie_embeddings=false --set compression.boundary.method=subspace"
                                 " --set compression.boundary.rank=8"},
                      MpiCase{4, " --set parallel.context=1 --set model.layers=4 --set parallel.pipeline=4"
                                 " --set parallel.microbatches=2 --set parallel.schedule=gpipe"
                                 " --set model.tie_embeddings=false"},
                      // 2 stages x 2 context ranks, MoS K/V and subspace boundaries.
                      MpiCase{4, " --set parallel.context=2 --set parallel.pipeline=2 --set parallel.microbatches=2"
                                 " --set model.tie_embeddings=false --set compression.boundary.method=subspace"
                                 " --set compression.boundary.rank=8 --set compression.method=mos"
                                 " --set compression.k_ratio=0.5 --set compression.v_ratio=0.5"
                                 " --set compression.warmup_steps=2 --set compression.fit_during_lr_warmup=true"},
                      // 2 data-parallel replicas of 2 context ranks, SparseLoCo every 2 steps.
                      MpiCase{4, " --set parallel.context=2 --set parallel.data=2"
                                 " --set parallel.data_sync={\\\"method\\\":\\\"sparseloco\\\",\\\"inner_steps\\\":2}"},
                      // The same through a relay on node 7 (the last): the relay flag crosses the MPI log gather.
                      MpiCase{4, " --set parallel.context=2 --set parallel.data=2"
                                 " --set parallel.data_sync={\\\"method\\\":\\\"sparseloco\\\",\\\"inner_steps\\\":2,"
                                 "\\\"exchange\\\":\\\"relay\\\"}"},
                      // DiLoCo every 2 steps, each exchange merged 2 steps later (eager): windows of steps
                      // whose step_end barriers and background collectives cross the MPI log gather.
                      MpiCase{4, " --set parallel.context=2 --set parallel.data=2"
                                 " --set parallel.data_sync={\\\"method\\\":\\\"diloco\\\",\\\"inner_steps\\\":2,"
                                 "\\\"delay_steps\\\":2,\\\"eager\\\":true}"},
                      // DiLoCo every 2 steps over 3 replicas, node 2 at a quarter speed, a deadline of 0:
                      // rank 0's replay decides who makes each round (not replica 2), every process trains it.
                      MpiCase{3, " --set parallel.context=1 --set parallel.data=3 --set training.batch_size=3"
                                 " --set training.checkpoint_every=2"
                                 " --set parallel.data_sync={\\\"method\\\":\\\"diloco\\\",\\\"inner_steps\\\":2,"
                                 "\\\"deadline_seconds\\\":0}"
                                 " --set network.dynamics=[{\\\"node\\\":2,\\\"speed\\\":{\\\"steps\\\":"
                                 "[[\\\"0s\\\",0.25]]}}]"},
                      // 2 stages x 2 context ranks under sparse_update over each stage's context ranks
                      // (its error buffers, per-rank norms, the weights projected back into span(U)).
                      MpiCase{4, " --set parallel.context=2 --set parallel.pipeline=2 --set parallel.microbatches=2"
                                 " --set model.tie_embeddings=false --set compression.boundary.method=subspace"
                                 " --set compression.boundary.rank=8 --set compression.weight_sync=sparse_update"}),
    [](const auto& info) { return "P" + std::to_string(info.param.ranks) + "_" + std::to_string(info.index); });

}  // namespace
