// RunOptions::on_step_error (runtime/train/run.h): called once, with the
// exception, when a training step throws, before the exception goes on; not
// for what fails before the steps start. An MPI rank ends the job from there
// (cli/cmd_run.cpp), while the trainer's deferred collectives still have their buffers.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/scenario/load.h"
#include "runtime/train/run.h"
#include "tests/runtime/test_run_support.h"

namespace lowband::train::test {
namespace {

Scenario tiny(int steps) {
  return builtin_scenario("default", {"model.layers=2", "model.d_model=32", "model.heads=4", "model.kv_heads=2",
                                      "model.ffn_hidden=64", "model.seq_len=64", "parallel.context=2",
                                      "network.nodes=2", "training.batch_size=2", "training.eval_every=5",
                                      "training.steps=" + std::to_string(steps)});
}

// Files of this process larger than `bytes` cannot grow (writes fail with EFBIG
// rather than raising SIGXFSZ) until the object goes.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = nullptr;
};

class RunStepError : public RunDirTest {};

TEST_F(RunStepError, IsCalledOnceWithTheExceptionAStepThrows) {
  std::vector<std::string> seen;
  RunOptions options;
  options.out_dir = (dir_ / "run").string();
  options.on_step_error = [&](const std::exception& e) { seen.push_back(e.what()); };
  std::string thrown;
  {
    // steps.jsonl grows past this within the steps; the files written before them fit.
    const FileSizeLimit limit(6000);
    try {
      run_training(tiny(200), options);
    } catch (const std::exception& e) {
      thrown = e.what();
    }
  }
  ASSERT_FALSE(thrown.empty()) << "the run did not fail";
  EXPECT_NE(thrown.find("steps.jsonl"), std::string::npos) << thrown;
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], thrown);
}

TEST_F(RunStepError, IsNotCalledForWhatFailsBeforeTheSteps) {
  fs::create_directories(dir_ / "run");
  std::ofstream(dir_ / "run" / "checkpoint.bin") << "x";  // the directory holds another run
  int calls = 0;
  RunOptions options;
  options.out_dir = (dir_ / "run").string();
  options.on_step_error = [&](const std::exception&) { ++calls; };
  EXPECT_THROW(run_training(tiny(4), options), lowband::InputError);
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace lowband::train::test
