// `lowband run` on the keyed-recall task (training.data_source "recall"): every
// evaluation reports the loss and accuracy of the remote and local answers, over
// exactly the answer targets the generator marks in the validation batches.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "runtime/data/recall.h"
#include "runtime/train/run.h"
#include "tests/runtime/test_run_support.h"

namespace lowband::train::test {
namespace {

class RunRecall : public RunDirTest {};

TEST_F(RunRecall, EvaluationsCountTheMarkedAnswers) {
  const Scenario s = tiny_run_scenario({"training.data_source=recall", "training.data=", "model.vocab=256",
                                        "training.recall_pairs=2", "training.eval_batches=3"});
  RunOptions options;
  options.out_dir = dir_.string();
  const RunResult r = run_training(s, options);
  ASSERT_FALSE(r.diverged);
  // The answer targets of the 3 validation batches, counted from the generator itself.
  const RecallShape shape = recall_shape(s);
  double remote = 0, local = 0;
  for (int i = 0; i < 3; ++i) {
    const data::RecallBatch v = data::recall_batch(shape, s.training.seed, data::RecallStream::validation,
                                                   uint64_t(i) * uint64_t(s.training.batch_size), s.training.batch_size);
    for (data::AnswerKind k : v.answer) remote += k == data::AnswerKind::remote, local += k == data::AnswerKind::local;
  }
  ASSERT_GT(remote, 0);
  ASSERT_GT(local, 0);
  int evaluations = 0;
  for (const nlohmann::json& step : read_jsonl(dir_ / "steps.jsonl")) {
    if (!step.contains("val_loss")) continue;
    ++evaluations;
    EXPECT_EQ(step.at("val_answer_remote_targets").get<double>(), remote);
    EXPECT_EQ(step.at("val_answer_local_targets").get<double>(), local);
    for (const char* kind : {"remote", "local"}) {
      const double accuracy = step.at(std::string("val_answer_") + kind + "_accuracy").get<double>();
      EXPECT_GE(accuracy, 0.0);
      EXPECT_LE(accuracy, 1.0);
      // Counted over whole targets: a multiple of 1/targets.
      const double targets = kind == std::string("remote") ? remote : local;
      EXPECT_NEAR(accuracy * targets, std::round(accuracy * targets), 1e-6) << kind;
      EXPECT_TRUE(std::isfinite(step.at(std::string("val_answer_") + kind + "_loss").get<double>()));
    }
  }
  EXPECT_EQ(evaluations, 2);  // steps 2 and 4 (eval_every 2)
}

}  // namespace
}  // namespace lowband::train::test
