// Bounds of the flags that size the work on this machine (cli/commands.h).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "common/error.h"
#include "runtime/scenario/load.h"

namespace lowband::cli {

int max_threads_here() { return 4 * std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

void check_count_here(const std::string& flag, int n, const char* what) {
  const int most = max_threads_here();
  if (n < 1 || n > most)
    throw InputError(flag, "must be 1.." + std::to_string(most) + " (" + what + "; at most 4 x this machine's " +
                               std::to_string(most / 4) + " cores), got " + std::to_string(n));
}

void check_target_loss(const std::optional<double>& target) {
  if (target && !(std::isfinite(*target) && *target > 0))
    throw InputError("--target-loss", "must be a positive finite loss (a cross-entropy is above 0), got " +
                                          (std::ostringstream() << *target).str());
}

void check_builtin_name(const std::string& name) {
  try {
    builtin_scenario_file(name);
  } catch (const InputError& e) {  // the built-ins' own lookup and message (no place), at the flag
    throw InputError("--builtin", e.what());
  }
}

void check_omp_num_threads_env() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (!env || !*env) return;  // unset or empty: OpenMP's default
  const std::string text = env;
  const int most = max_threads_here();
  std::stringstream levels(text);
  std::string level;
  while (std::getline(levels, level, ',')) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(level.c_str(), &end, 10);
    if (level.empty() || *end != '\0' || errno != 0 || n < 1 || n > most)
      throw InputError("OMP_NUM_THREADS", "each level must be a thread count of 1.." + std::to_string(most) +
                                              " (at most 4 x this machine's " + std::to_string(most / 4) +
                                              " cores), got \"" + text + "\"");
  }
}

void check_no_empty_argument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool empty_after_equals = arg.size() > 3 && arg.rfind("--", 0) == 0 && arg.back() == '=' &&
                                    arg.find('=') == arg.size() - 1;
    if (!arg.empty() && !empty_after_equals) continue;
    const std::string before = i > 1 ? argv[i - 1] : "";
    const std::string flag = empty_after_equals ? arg.substr(0, arg.size() - 1)
                             : before.rfind("--", 0) == 0 && before.find('=') == std::string::npos
                                 ? before
                                 : "argument " + std::to_string(i);
    throw InputError(flag, "an empty value: give one, or leave the flag out for its default");
  }
}

}  // namespace lowband::cli
