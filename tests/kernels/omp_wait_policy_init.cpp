// Before main: idle OpenMP threads sleep instead of spinning, as in lowband
// (kernels/omp_wait_policy.h), so these tests do not crawl on a machine whose
// cores are busy with other work. glibc passes argc, argv and envp to constructors.
// With LOWBAND_TEST_COUNT_STARTS_TO set, each run of this initialiser adds a line
// to that file (test_omp_wait_policy.cpp counts them).
#include <cstdlib>
#include <fstream>

#include "kernels/omp_wait_policy.h"

namespace {
__attribute__((constructor)) void limit_omp_spinning(int, char** argv, char**) {
  if (const char* count_to = std::getenv("LOWBAND_TEST_COUNT_STARTS_TO")) std::ofstream(count_to, std::ios::app) << "start\n";
  lowband::kernels::limit_omp_spinning_by_default(argv);
}
}  // namespace
