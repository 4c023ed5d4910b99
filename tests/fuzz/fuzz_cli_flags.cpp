// libFuzzer target: the command line of every subcommand. The input is an argv
// after "lowband": one argument per piece between NUL bytes or newlines. The app
// is main's (cli::add_all_commands) in flags-only mode: each command checks its
// flags and the scenario they name, then returns before any work or write. Any
// error but lowband::InputError, CLI11's parse errors, CommandFailed and a
// filesystem_error naming its path (main's one line "PATH: reason", exit 2: a
// symlink loop, a name too long) is a bug and stops the fuzzer, as do crashes,
// leaks, hangs and a file written into the working directory. Each input runs
// in an empty scratch directory, so a relative path names nothing; crash inputs
// are written where the fuzzer was started (-artifact_prefix is set to it unless
// given). Seeds: scripts/fuzz-smoke.sh.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/error.h"

namespace {

namespace fs = std::filesystem;

// An empty directory of this process's own, removed at exit.
struct ScratchDir {
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "lowband_fuzz_cli_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    path = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

const fs::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

// The working directory is the scratch one while a command runs; libFuzzer's own
// paths (corpus, artifacts) stay relative to where it was started.
struct InScratchDir {
  InScratchDir() : home(fs::current_path()) { fs::current_path(scratch_dir()); }
  ~InScratchDir() { fs::current_path(home); }
  fs::path home;
};

// std::cout and std::cerr go nowhere while a command runs (help, notes, tables).
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return traits_type::not_eof(c); }
};
struct Silenced {
  Silenced() : out(std::cout.rdbuf(&null)), err(std::cerr.rdbuf(&null)) {}
  ~Silenced() {
    std::cout.rdbuf(out);
    std::cerr.rdbuf(err);
  }
  NullBuffer null;
  std::streambuf *out, *err;
};

std::vector<std::string> arguments(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"lowband"};
  if (size == 0) return args;
  args.emplace_back();
  for (size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n')
      args.emplace_back();
    else
      args.back() += c;
  }
  return args;
}

void parse(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(args.size());
  try {
    lowband::cli::check_no_empty_argument(argc, argv.data());
    CLI::App app;
    lowband::cli::add_all_commands(app);
    app.parse(argc, argv.data());
  } catch (const CLI::ParseError&) {  // CLI11's own, and --help (CallForHelp)
  } catch (const lowband::cli::CommandFailed&) {
  } catch (const lowband::InputError&) {
  } catch (const std::filesystem::filesystem_error& e) {
    if (e.path1().empty()) throw;  // a line naming no place
  }
}

}  // namespace

// Crash inputs go where the fuzzer was started, not into the scratch directory
// the command was in: -artifact_prefix=THAT_DIR/ unless given.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  lowband::cli::set_flags_only(true);
  for (int i = 1; i < *argc; ++i)
    if (std::strncmp((*argv)[i], "-artifact_prefix=", 17) == 0) return 0;
  static std::vector<char*> with_prefix(*argv, *argv + *argc);
  static std::string prefix = "-artifact_prefix=" + fs::current_path().string() + "/";
  with_prefix.insert(with_prefix.begin() + 1, prefix.data());
  with_prefix.push_back(nullptr);
  *argc += 1;
  *argv = with_prefix.data();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = arguments(data, size);
  {
    const InScratchDir in_scratch;
    const Silenced silenced;
    parse(args);
  }
  // Bad input writes nothing, and flags-only commands write nothing at all.
  if (!fs::is_empty(scratch_dir())) {
    std::fprintf(stderr, "fuzz_cli_flags: the command wrote into its working directory %s\n",
                 scratch_dir().c_str());
    std::abort();
  }
  return 0;
}
