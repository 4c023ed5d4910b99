#include "kernels/omp_wait_policy.h"

#include <alloca.h>
#include <unistd.h>

#include <cstdlib>

namespace lowband::kernels {
namespace {

constexpr char kPolicyName[] = "OMP_WAIT_POLICY=";
constexpr char kSpinName[] = "GOMP_SPINCOUNT=";
constexpr char kAssignment[] = "OMP_WAIT_POLICY=passive";
constexpr bool same(const char* a, const char* b) { return *a == *b && (*a == 0 || same(a + 1, b + 1)); }
static_assert(same(kAssignment + sizeof(kPolicyName) - 1, kDefaultOmpWaitPolicy));

bool starts_with(const char* text, const char* prefix) {
  for (; *prefix != 0; ++text, ++prefix)
    if (*text != *prefix) return false;
  return true;
}

// The executable's .preinit_array runs after every library is mapped but before
// any library's initialiser, libgomp's and cuBLAS's included. libc's environment
// is not set up yet (getenv and setenv would neither see nor keep anything), so
// this reads envp itself and, when neither variable is there, executes the
// program again at once with OMP_WAIT_POLICY added. The libraries are then
// initialised once, not twice (cuBLAS's initialisers alone take ~0.4 s of CPU).
void choose_before_libraries_initialise(int, char** argv, char** envp) {
  if (argv == nullptr || argv[0] == nullptr || envp == nullptr) return;
  size_t count = 0;
  for (; envp[count] != nullptr; ++count)
    if (starts_with(envp[count], kPolicyName) || starts_with(envp[count], kSpinName)) return;
  char** env = static_cast<char**>(alloca((count + 2) * sizeof(char*)));
  for (size_t i = 0; i < count; ++i) env[i] = envp[i];
  env[count] = const_cast<char*>(kAssignment);
  env[count + 1] = nullptr;
  execve("/proc/self/exe", argv, env);
  // Still here: no /proc? main's limit_omp_spinning_by_default tries again.
}
__attribute__((section(".preinit_array"), used)) void (*const kPreinit)(int, char**, char**) =
    choose_before_libraries_initialise;

}  // namespace

void limit_omp_spinning_by_default(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (argv == nullptr || argv[0] == nullptr) return;
  if (setenv("OMP_WAIT_POLICY", kDefaultOmpWaitPolicy, 0) != 0) return;
  execv("/proc/self/exe", argv);
  // Still here: exec failed (no /proc?). Run on with what libgomp already read;
  // the variable stays set, so child processes get it.
}

}  // namespace lowband::kernels
