#pragma once
// OpenMP wait policy for lowband's programs: passive (idle threads sleep at
// once) unless the user chose otherwise.
//
// Why: libgomp's default lets an idle thread spin for up to ~300,000 iterations
// before sleeping. On a machine whose cores are shared with other processes,
// those spinning threads steal the cores the working threads need: `lowband run`
// went from ~1300 to ~330 tokens/s under contention. On a quiet machine passive
// costs little (kernels/README.md, "OpenMP wait policy").
//
// libgomp reads OMP_WAIT_POLICY once, when it is loaded (before main), so the
// only way for a program to change it is to set the variable and execute itself
// again. That happens at most once: the new process finds the variable set.
#include <cstddef>

namespace lowband::kernels {

// Call first in main(argc, argv). When OMP_WAIT_POLICY is unset: sets it to
// "passive" and re-executes /proc/self/exe with the same arguments (does not
// return on success). Returns normally when the variable is already set (by
// the user, e.g. OMP_WAIT_POLICY=active, or by the re-execution) or when the
// re-execution fails (the program then runs with libgomp's default).
void use_passive_omp_wait_by_default(char** argv);

}  // namespace lowband::kernels
