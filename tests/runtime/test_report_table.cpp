// report_markdown: a run that stopped early says how far it got in whole steps.
#include <gtest/gtest.h>

#include <string>

#include "runtime/report/report_table.h"
#include "runtime/report/run_dir_reader.h"

namespace lowband::report::test {
namespace {

TEST(ReportTable, AnUnfinishedRunCountsWholeSteps) {
  Report r;
  ReportRow row;
  row.label = "stopped";
  row.steps_done = 8;
  row.steps_planned = 40;
  r.rows.push_back(row);
  const std::string md = report_markdown(r);
  EXPECT_NE(md.find("(8/40 steps)"), std::string::npos) << md;
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
}

}  // namespace
}  // namespace lowband::report::test
