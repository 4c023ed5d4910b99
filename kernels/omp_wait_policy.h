#pragma once
// lowband's programs default to OMP_WAIT_POLICY=passive: idle OpenMP threads
// sleep at once instead of spinning.
//
// libgomp's default lets a thread that waits at a barrier or for the next
// parallel region spin ~300,000 times (milliseconds) before sleeping. When the
// cores are shared with other processes, those spinning threads take the cores
// the working threads need: a training step of bench_model's model took 1.6-2.7x
// as long as with passive waiting while other processes kept one of the two
// cores busy. On a quiet machine passive costs about 4 % (kernels/README.md,
// "OpenMP wait policy", which also has the figures for a short spin,
// GOMP_SPINCOUNT=10000: ~1 % quiet, ~8 % slower than passive under contention).
//
// libgomp reads these variables once, when it is loaded (before main), so a
// program can change them only by setting the variable and executing itself
// again. That happens at most once: the new process finds the variable set. An
// executable that links omp_wait_policy.cpp does it from its .preinit_array,
// before any library's initialiser has run (so they run once, not twice);
// limit_omp_spinning_by_default does it from main where that did not happen.
#include <cstddef>

namespace lowband::kernels {

inline constexpr const char* kDefaultOmpWaitPolicy = "passive";

// Call first in main(argc, argv) (which also links the .preinit_array hook in).
// When neither OMP_WAIT_POLICY nor
// GOMP_SPINCOUNT is set: sets OMP_WAIT_POLICY=kDefaultOmpWaitPolicy and
// re-executes /proc/self/exe with the same arguments (does not return on
// success). Returns normally when either variable is already set (by the user,
// e.g. OMP_WAIT_POLICY=active, or by the re-execution) or when re-executing
// fails (the program then runs with libgomp's default).
void limit_omp_spinning_by_default(char** argv);

}  // namespace lowband::kernels
