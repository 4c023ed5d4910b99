// lowband: network-bandwidth simulator and experiment harness for decentralized training.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <new>

#include "cli/commands.h"
#include "common/error.h"
#include "kernels/omp_wait_policy.h"

int main(int argc, char** argv) {
  // Idle OpenMP threads sleep instead of spinning unless OMP_WAIT_POLICY or
  // GOMP_SPINCOUNT is set: re-executes once (kernels/omp_wait_policy.h).
  lowband::kernels::limit_omp_spinning_by_default(argv);
  CLI::App app{"lowband: how fast does a model converge, in wall-clock time, when it is trained\n"
               "across machines joined by slow links, with and without compression?"};
  lowband::cli::add_all_commands(app);
  try {
    lowband::cli::check_no_empty_argument(argc, argv);
    lowband::cli::check_omp_num_threads_env();
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, like every other error (CLI11's own exit() adds a second).
    std::fprintf(stderr, "lowband: error: %s (see lowband --help)\n", e.what());
    return 2;
  } catch (const lowband::cli::CommandFailed& e) {
    std::fprintf(stderr, "lowband: %s\n", e.what());
    return e.exit_code;
  } catch (const lowband::InputError& e) {
    std::fprintf(stderr, "lowband: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Sizes are checked up front (run checks the model against this machine's memory);
    // what still runs out is the machine's, not a bug.
    std::fprintf(stderr, "lowband: error: out of memory: try a smaller model (model.*), batch or fewer ranks\n");
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path given that the system cannot follow (a symlink loop, a permission): the
    // user's to fix, named like any bad input.
    const std::string place = e.path1().empty() ? "" : e.path1().string() + ": ";
    std::fprintf(stderr, "lowband: error: %s%s\n", place.c_str(), e.code().message().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lowband: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
