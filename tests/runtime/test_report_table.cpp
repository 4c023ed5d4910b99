// report_markdown: a run that stopped early says how far it got in whole steps.
#include <gtest/gtest.h>

#include <string>

#include "runtime/report/report_table.h"
#include "runtime/report/run_dir_reader.h"

namespace lowband::report::test {
namespace {

// Each row its own arm of one seed, as build_report makes runs that share no arm.
void one_arm_per_row(Report& r) {
  for (size_t i = 0; i < r.rows.size(); ++i) r.arms.push_back({r.rows[i].label, {i}, {1}, {}, {}, {}, {}, {}});
}

TEST(ReportTable, AnUnfinishedRunCountsWholeSteps) {
  Report r;
  ReportRow row;
  row.label = "stopped";
  row.steps_done = 8;
  row.steps_planned = 40;
  r.rows.push_back(row);
  one_arm_per_row(r);
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("(8/40 steps)"), std::string::npos) << md;
}

// The bytes a rank sends per step, and of them what carries K/V, boundaries,
// weights and the rest (grouped from the summary's kinds; a lone group adds nothing).
TEST(ReportTable, BytesPerStepSayWhatTheyCarry) {
  Report r;
  ReportRow row;
  row.label = "mos";
  row.bytes_per_step = 3.0 * 1024 * 1024;
  row.bytes_per_step_by_group = {{"K/V", 1024.0 * 1024}, {"weights", 2.0 * 1024 * 1024}};
  r.rows.push_back(row);
  row.label = "one kind";
  row.bytes_per_step_by_group = {{"weights", 3.0 * 1024 * 1024}};
  r.rows.push_back(row);
  one_arm_per_row(r);
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("| 3 MiB (K/V 1 MiB, weights 2 MiB) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 MiB |"), std::string::npos) << md;
}

// A pipeline run whose boundaries compress is not an uncompressed baseline, and
// its label says what crosses the boundaries.
TEST(ReportTable, BoundaryCompressionIsCompression) {
  RunData run;
  run.scenario = nlohmann::json::parse(R"({"compression": {"method": "none", "boundary": {"method": "none"}}})");
  EXPECT_TRUE(is_uncompressed(run));
  EXPECT_EQ(compression_label(run), "uncompressed");
  run.scenario["compression"]["boundary"] = {{"method", "subspace"}, {"rank", 8}};
  EXPECT_FALSE(is_uncompressed(run));
  EXPECT_EQ(compression_label(run), "boundary subspace k=8");
  run.scenario["compression"]["method"] = "topk";
  run.scenario["compression"]["topk_fraction"] = 0.1;
  EXPECT_EQ(compression_label(run), "topk 0.1, boundary subspace k=8");
  // A compressed weight sync is compression too, alone or beside a codec.
  run.scenario["compression"]["weight_sync"] = "lowrank_grad";
  run.scenario["compression"]["sync_fraction"] = 0.05;
  EXPECT_EQ(compression_label(run), "topk 0.1, boundary subspace k=8, weights lowrank_grad 0.05");
  run.scenario["compression"] = {{"method", "none"}, {"weight_sync", "sparse"}, {"sync_fraction", 0.05}, {"sync_every", 10}};
  EXPECT_FALSE(is_uncompressed(run));
  EXPECT_EQ(compression_label(run), "weights sparse 0.05 every 10");
}

}  // namespace
}  // namespace lowband::report::test
