#include "kernels/omp_wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace lowband::kernels {

void limit_omp_spinning_by_default(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (argv == nullptr || argv[0] == nullptr) return;
  if (setenv("OMP_WAIT_POLICY", kDefaultOmpWaitPolicy, 0) != 0) return;
  execv("/proc/self/exe", argv);
  // Still here: exec failed (no /proc?). Run on with what libgomp already read;
  // the variable stays set, so child processes get it.
}

}  // namespace lowband::kernels
