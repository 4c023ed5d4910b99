// report_markdown: a run that stopped early says how far it got in whole steps.
#include <gtest/gtest.h>

#include <string>

#include "runtime/report/report_table.h"

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

}  // namespace
}  // namespace lowband::report::test
