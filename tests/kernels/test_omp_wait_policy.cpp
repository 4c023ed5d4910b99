// The test binaries run with a passive OpenMP wait policy unless the user chose
// one: the .preinit_array hook (kernels/omp_wait_policy.cpp) re-executes the
// binary before any library initialises, and limit_omp_spinning_by_default, the
// fallback called from main (here: omp_wait_policy_init.cpp), re-executes with
// OMP_WAIT_POLICY=passive when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "kernels/omp_wait_policy.h"

namespace lowband::kernels {
namespace {

constexpr const char* kReportTo = "LOWBAND_TEST_REPORT_WAIT_POLICY_TO";
constexpr const char* kCountStartsTo = "LOWBAND_TEST_COUNT_STARTS_TO";  // omp_wait_policy_init.cpp

TEST(OmpWaitPolicy, IsChosenBeforeMainAndCallingAgainReturns) {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  ASSERT_TRUE(policy != nullptr || spin != nullptr)
      << "the constructor in omp_wait_policy_init.cpp did not run";
  // A variable is set already: a second call must return rather than execute
  // the binary again, and change nothing.
  const std::string policy_before = policy != nullptr ? policy : "";
  char name[] = "test_kernels";
  char* argv[] = {name, nullptr};
  limit_omp_spinning_by_default(argv);
  const char* policy_after = std::getenv("OMP_WAIT_POLICY");
  EXPECT_EQ(policy_after != nullptr ? policy_after : "", policy_before);
}

// Run in the re-executed child of the next test only: reports what it got.
TEST(OmpWaitPolicyChild, ReportsWaitPolicy) {
  const char* out = std::getenv(kReportTo);
  if (out == nullptr) GTEST_SKIP() << "runs only as the child of the OmpWaitPolicy tests";
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::ofstream(out) << (policy != nullptr ? policy : "unset");
}

// Forks a child with neither variable set, which starts OmpWaitPolicyChild.ReportsWaitPolicy
// (reporting to `report`; each start counted in `count_starts_to` unless empty) through
// start(argv). Its exit status; 99: start returned; -1: no child, or it did not exit.
int run_reporting_child(const std::string& report, const std::string& count_starts_to, void (*start)(char**)) {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    unsetenv("OMP_WAIT_POLICY");
    unsetenv("GOMP_SPINCOUNT");
    setenv(kReportTo, report.c_str(), 1);
    if (!count_starts_to.empty()) setenv(kCountStartsTo, count_starts_to.c_str(), 1);
    std::freopen("/dev/null", "w", stdout);  // the child's own test report
    char self[] = "test_kernels";
    char filter[] = "--gtest_filter=OmpWaitPolicyChild.ReportsWaitPolicy";
    char* argv[] = {self, filter, nullptr};
    start(argv);
    _exit(99);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Started with neither variable set, the binary re-executes itself from its
// .preinit_array: the libraries' and the program's initialisers run once, in the
// second process (re-executing from main would run them in both: 2 starts).
TEST(OmpWaitPolicy, ReexecutesBeforeAnyInitialiserRuns) {
  const std::string base = ::testing::TempDir() + "lowband_wait_policy_pre_" + std::to_string(getpid());
  const std::string report = base + ".policy", starts = base + ".starts";
  std::remove(report.c_str());
  std::remove(starts.c_str());
  ASSERT_EQ(run_reporting_child(report, starts, [](char** argv) { execv("/proc/self/exe", argv); }), 0);
  std::string got, line;
  std::ifstream(report) >> got;
  EXPECT_EQ(got, kDefaultOmpWaitPolicy);
  int count = 0;
  for (std::ifstream in(starts); std::getline(in, line);) ++count;
  EXPECT_EQ(count, 1) << "the program's initialisers ran in more than one process";
  std::remove(report.c_str());
  std::remove(starts.c_str());
}

TEST(OmpWaitPolicy, ReexecutesPassiveWhenNothingIsSet) {
  const std::string report = ::testing::TempDir() + "lowband_wait_policy_" + std::to_string(getpid());
  std::remove(report.c_str());
  EXPECT_EQ(run_reporting_child(report, "", limit_omp_spinning_by_default), 0) << "99: did not re-execute";
  std::string got;
  std::ifstream(report) >> got;
  EXPECT_EQ(got, kDefaultOmpWaitPolicy);
  std::remove(report.c_str());
}

}  // namespace
}  // namespace lowband::kernels
