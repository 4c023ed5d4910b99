// Resuming what cannot be resumed: each case is an InputError naming the place
// (the checkpoint file, --resume, --steps) and leaves the run directory as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "common/binary_io.h"
#include "common/error.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/run.h"
#include "tests/runtime/test_resume_support.h"

namespace lowband::train::test {
namespace {

class ResumeErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_support::unique_test_temp_dir("lowband_resume_err");
    // Stopped after 6 steps: a checkpoint at 4, lines 5 and 6 past it.
    RunOptions o;
    o.out_dir = dir_.string();
    o.stop_after_steps = 6;
    run_training(resume_tiny(), o);
    steps_before_ = slurp(dir_ / "steps.jsonl");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The InputError's message of resuming `s` (fails the test when none is thrown).
  std::string resume_error(const Scenario& s, int steps = -1, const std::string& dir = "") {
    RunOptions o;
    o.out_dir = dir.empty() ? dir_.string() : dir;
    o.resume = true;
    o.steps = steps;
    try {
      run_training(s, o);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no InputError";
    return "";
  }
  void expect_untouched() { EXPECT_EQ(slurp(dir_ / "steps.jsonl"), steps_before_); }

  std::string checkpoint_bytes() { return slurp(dir_ / "checkpoint.bin"); }
  void write_checkpoint_bytes(const std::string& bytes) {
    std::ofstream(dir_ / "checkpoint.bin", std::ios::binary | std::ios::trunc) << bytes;
  }

  fs::path dir_;
  std::string steps_before_;
};

TEST_F(ResumeErrors, AnotherScenarioNamesTheKey) {
  const std::string e = resume_error(resume_tiny({"training.lr=0.02"}));
  EXPECT_NE(e.find("checkpoint.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("training.lr"), std::string::npos) << e;
  expect_untouched();
}

TEST_F(ResumeErrors, DamagedCheckpoint) {
  std::string bytes = checkpoint_bytes();
  bytes[bytes.size() / 2] ^= 0x5a;
  write_checkpoint_bytes(bytes);
  const std::string e = resume_error(resume_tiny());
  EXPECT_NE(e.find("checkpoint.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("damaged"), std::string::npos) << e;
  expect_untouched();
}

TEST_F(ResumeErrors, TruncatedCheckpoint) {
  write_checkpoint_bytes(checkpoint_bytes().substr(0, 1000));
  const std::string e = resume_error(resume_tiny());
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  write_checkpoint_bytes(checkpoint_bytes().substr(0, 12));  // inside the header
  EXPECT_NE(resume_error(resume_tiny()).find("truncated"), std::string::npos);
  expect_untouched();
}

TEST_F(ResumeErrors, ForeignFileAndOtherVersion) {
  const std::string good = checkpoint_bytes();
  write_checkpoint_bytes("{\"not\": \"a checkpoint\"}\n");
  EXPECT_NE(resume_error(resume_tiny()).find("not a lowband checkpoint"), std::string::npos);
  std::string newer = good;
  newer[8] = char(kCheckpointVersion + 1);  // the version's low byte
  write_checkpoint_bytes(newer);
  EXPECT_NE(resume_error(resume_tiny()).find("format version"), std::string::npos);
  expect_untouched();
}

TEST_F(ResumeErrors, MissingDirectory) {
  const std::string e = resume_error(resume_tiny(), -1, (dir_ / "nowhere").string());
  EXPECT_EQ(e.rfind("--resume", 0), 0u) << e;
  EXPECT_FALSE(fs::exists(dir_ / "nowhere"));
}

// Steps written but no checkpoint (killed before the first one): nothing to continue
// from, so resuming and a fresh run into the directory both start again from step 0.
TEST_F(ResumeErrors, NoCheckpointStartsAgainFromStepZero) {
  for (const bool resume : {true, false}) {
    if (!resume) {  // stopped again after 6 steps
      fs::remove_all(dir_);
      RunOptions stopped;
      stopped.out_dir = dir_.string();
      stopped.stop_after_steps = 6;
      run_training(resume_tiny(), stopped);
    }
    fs::remove(dir_ / "checkpoint.bin");
    RunOptions o;
    o.out_dir = dir_.string();
    o.resume = resume;
    const RunResult r = run_training(resume_tiny(), o);
    EXPECT_EQ(r.resumed_at_step, 0);
    const auto lines = read_jsonl(dir_ / "steps.jsonl");
    ASSERT_EQ(lines.size(), 10u) << (resume ? "--resume" : "--out");
    for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i].at("step").get<size_t>(), i + 1);
  }
  // A run that ended without a checkpoint (checkpoint_every 0) is kept.
  fs::remove(dir_ / "checkpoint.bin");
  const std::string steps = slurp(dir_ / "steps.jsonl");
  EXPECT_NE(resume_error(resume_tiny()).find("ended"), std::string::npos);
  RunOptions fresh;
  fresh.out_dir = dir_.string();
  EXPECT_THROW(run_training(resume_tiny(), fresh), InputError);
  EXPECT_EQ(slurp(dir_ / "steps.jsonl"), steps);
}

// A run that cannot start (a corpus shorter than one window) writes nothing: no
// directory, or the one given left as it was.
TEST_F(ResumeErrors, ARunThatCannotStartWritesNothing) {
  std::ofstream(dir_ / "short.txt") << "hello world";
  RunOptions o;
  o.out_dir = (dir_ / "new").string();
  try {
    run_training(resume_tiny({"training.data=" + (dir_ / "short.txt").string()}), o);
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("training.data", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("model.seq_len"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "new"));
  fs::create_directories(dir_ / "empty");
  o.out_dir = (dir_ / "empty").string();
  EXPECT_THROW(run_training(resume_tiny({"training.data=" + (dir_ / "short.txt").string()}), o), InputError);
  EXPECT_TRUE(fs::is_empty(dir_ / "empty"));
}

// A checkpoint whose checksum matches but whose target count is absurd (another
// build's, or damage before the checksum was taken): an InputError, not an
// allocation of 2^32 targets.
TEST_F(ResumeErrors, AbsurdTargetCountIsAnError) {
  std::ostringstream payload;
  binary::write_string(payload, "");  // scenario
  binary::write_i64(payload, 4);      // steps done
  binary::write_bool(payload, false);
  binary::write_string(payload, "");  // trainer state
  binary::write_u64(payload, uint64_t(1) << 32);  // targets, and none follows
  const std::string body = payload.str();
  std::ostringstream file;
  file.write("LBCKPT\r\n", 8);
  binary::write_u64(file, kCheckpointVersion);
  binary::write_u64(file, body.size());
  binary::write_u64(file, binary::checksum64(body.data(), body.size()));
  file << body;
  write_checkpoint_bytes(file.str());
  EXPECT_THROW(read_checkpoint((dir_ / "checkpoint.bin").string()), InputError);
}

TEST(CheckpointTotals, AbsurdListCountIsAnError) {
  const RunTotals empty;
  std::string bytes = encode_totals(empty);
  // The tail: the K and V reconstruction errors' list counts (0), curve.csv (its
  // length, its bytes), then 48 bytes (the all-ranks sums' count, the time lost,
  // the restarts, the rounds closed, the replicas dropped, the peak step's bytes).
  // Make the K count 2^32 lists that the bytes do not hold.
  const uint64_t huge = uint64_t(1) << 32;
  std::memcpy(bytes.data() + bytes.size() - 48 - empty.curve_csv.size() - 8 - 8 - 8, &huge, 8);
  EXPECT_THROW(decode_totals(bytes), binary::BinaryFormatError);
}

TEST_F(ResumeErrors, CheckpointThatIsADirectory) {
  fs::remove(dir_ / "checkpoint.bin");
  fs::create_directories(dir_ / "checkpoint.bin");
  EXPECT_NE(resume_error(resume_tiny()).find("checkpoint.bin: not a regular file"), std::string::npos);
  expect_untouched();
}

TEST_F(ResumeErrors, OtherStepCount) {
  EXPECT_EQ(resume_error(resume_tiny(), 12).rfind("--steps", 0), 0u);
  expect_untouched();
}

TEST_F(ResumeErrors, StepsFileShorterThanRecorded) {
  std::ofstream(dir_ / "steps.jsonl", std::ios::trunc) << "{}\n";
  const std::string e = resume_error(resume_tiny());
  EXPECT_NE(e.find("steps.jsonl"), std::string::npos) << e;
  EXPECT_EQ(slurp(dir_ / "steps.jsonl"), "{}\n");
}

TEST(CheckpointTotals, RoundTripBitForBit) {
  RunTotals t;
  t.header = {{"scenario", "x"}, {"ranks", 4}};
  t.steps_planned = 7, t.steps_done = 3;
  t.sim_total_seconds = 0.1 + 0.2;  // not representable exactly: the bits must survive
  t.last_train_loss = 1.0 / 3.0;
  t.last_val_loss = 2.0 / 7.0;
  t.bytes_per_rank_sum = {{"kv", 8192.5}, {"total", 1e9 / 3}};
  t.bytes_all_ranks_sum = {{"kv", 4 * 8192.5}, {"total", 4e9 / 3}};
  t.kv_recon_k = {{}, {0.25, 1.0 / 9}};
  t.kv_recon_v = {{}, {0.5, 0.125}};
  t.diverged = true, t.message = "m";
  t.curve_csv += "1,2,3\n";
  t.sim_lost_seconds = 0.7 / 3, t.sim_restarts = 5;
  const RunTotals back = decode_totals(encode_totals(t));
  EXPECT_EQ(back.sim_lost_seconds, t.sim_lost_seconds);
  EXPECT_EQ(back.sim_restarts, 5);
  EXPECT_EQ(back.header, t.header);
  EXPECT_EQ(back.steps_done, 3);
  EXPECT_EQ(back.sim_total_seconds, t.sim_total_seconds);
  EXPECT_EQ(back.last_val_loss, t.last_val_loss);
  EXPECT_EQ(back.bytes_per_rank_sum, t.bytes_per_rank_sum);
  EXPECT_EQ(back.bytes_all_ranks_sum, t.bytes_all_ranks_sum);
  EXPECT_EQ(back.kv_recon_k, t.kv_recon_k);
  EXPECT_EQ(back.kv_recon_v, t.kv_recon_v);
  EXPECT_EQ(back.summary_json(), t.summary_json());
  EXPECT_EQ(back.curve_csv, t.curve_csv);
}

// Totals written before the all-ranks byte sums existed end after curve.csv: they
// still read, with no sums.
TEST(CheckpointTotals, ReadsTotalsWithoutAllRanksSums) {
  RunTotals t;
  t.bytes_per_rank_sum = {{"total", 10.0}};
  t.curve_csv += "1,2,3\n";
  std::string bytes = encode_totals(t);
  bytes.resize(bytes.size() - 8);  // drop the empty map's count: the old layout
  const RunTotals back = decode_totals(bytes);
  EXPECT_EQ(back.bytes_per_rank_sum, t.bytes_per_rank_sum);
  EXPECT_TRUE(back.bytes_all_ranks_sum.empty());
  EXPECT_EQ(back.curve_csv, t.curve_csv);
}

}  // namespace
}  // namespace lowband::train::test
