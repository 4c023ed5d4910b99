#pragma once
// The command-line tests' fixture: runs `lowband ARGS` through the shell in a
// scratch directory and keeps its exit status, stdout and stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/slurp.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;

namespace lowband::test_support {

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = lowband::test_support::unique_test_temp_dir("lowband_cli");
  }
  void TearDown() override { fs::remove_all(dir_); }

  CommandResult run(const std::string& args) {
    const fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    const std::string cmd = std::string(LOWBAND_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }

  static int lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
  }

  fs::path dir_;
};

}  // namespace lowband::test_support
