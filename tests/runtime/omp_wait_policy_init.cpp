// Before main: idle OpenMP threads sleep instead of spinning, as in lowband
// (kernels/omp_wait_policy.h), so these tests do not crawl on a machine whose
// cores are busy with other work. glibc passes argc, argv and envp to constructors.
#include "kernels/omp_wait_policy.h"

namespace {
__attribute__((constructor)) void limit_omp_spinning(int, char** argv, char**) {
  lowband::kernels::limit_omp_spinning_by_default(argv);
}
}  // namespace
