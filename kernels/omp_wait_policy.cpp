#include "kernels/omp_wait_policy.h"

#include <unistd.h>

#include <cstdlib>

namespace lowband::kernels {

void use_passive_omp_wait_by_default(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (argv == nullptr || argv[0] == nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 0) != 0) return;
  execv("/proc/self/exe", argv);
  // Still here: exec failed (no /proc?). Run on with the policy libgomp already
  // read; leave the variable set so that child processes get passive.
}

}  // namespace lowband::kernels
