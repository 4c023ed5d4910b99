// The exit-code contract (docs/reliability.md), one bad input or environment at a
// time: exit 2, one line on stderr naming the place (a JSON path, file:line:column,
// a flag or a file), and nothing written. Exit 1 is left for bugs.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_support.h"

namespace {

using lowband::test_support::Cli;
using lowband::test_support::CommandResult;

class ExitCodes : public Cli {
 protected:
  // Exit 2, one line naming every one of `places`.
  void expect_bad_input(const CommandResult& r, std::initializer_list<std::string> places) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    for (const std::string& place : places) EXPECT_NE(r.err.find(place), std::string::npos) << place << ": " << r.err;
  }
};

TEST_F(ExitCodes, ANumberTooLargeForADoubleNamesItsLineAndPath) {
  const auto p = write("big.json", "{\n  \"name\": \"x\",\n  \"training\": {\"lr\": 1e309}\n}\n");
  expect_bad_input(run("validate " + p.string()), {p.string() + ":3:", "training.lr", "out of range"});
  expect_bad_input(run("estimate --builtin default --set training.lr=1e309"), {"--set training.lr=1e309"});
}

TEST_F(ExitCodes, AnOutputThatCannotBeWrittenNamesTheFile) {
  const fs::path missing = dir_ / "nodir" / "e.json";
  expect_bad_input(run("estimate --builtin default --json --out " + missing.string()), {missing.string()});
  fs::create_directories(dir_ / "adir");
  expect_bad_input(run("estimate --builtin default --json --out " + (dir_ / "adir").string()), {(dir_ / "adir").string()});
}

TEST_F(ExitCodes, CommandLineParseErrorsAreOneLine) {
  expect_bad_input(run("run --steps abc"), {"--steps"});
  expect_bad_input(run("run --no-such-flag"), {"--no-such-flag"});
}

TEST_F(ExitCodes, AnInfiniteBandwidthIsRejectedByValidate) {
  expect_bad_input(run("estimate --builtin default --set network.bandwidth=1e308Tbps"),
                   {"network.bandwidth", "out of range"});
}

TEST_F(ExitCodes, StepsAndRanksOutOfRange) {
  expect_bad_input(run("run --builtin default --steps -1 --out " + (dir_ / "r").string()), {"--steps"});
  EXPECT_FALSE(fs::exists(dir_ / "r"));
  for (const char* ranks : {"0", "-1", "1"})
    expect_bad_input(run(std::string("bench-comm --builtin default --ranks ") + ranks), {"--ranks"});
  expect_bad_input(run("bench-comm --builtin default --sizes 1e30GB"), {"--sizes", "out of range"});
}

TEST_F(ExitCodes, TokenizingADirectoryWritesNothing) {
  const fs::path out = dir_ / "t.u16";
  expect_bad_input(run("tokenize " + dir_.string() + " --tokenizer byte --out " + out.string()),
                   {dir_.string(), "not a regular file"});
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(ExitCodes, AModelTooLargeForThisMachineNamesTheModelKeys) {
  const fs::path out = dir_ / "huge";
  expect_bad_input(run("run --builtin default --set model.d_model=1048576 --set model.heads=1 --set model.kv_heads=1"
                       " --set model.ffn_hidden=1048576 --out " + out.string()),
                   {"model.d_model", "model.layers"});
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(ExitCodes, ADirectoryAsCorpusIsNamedAsSuch) {
  expect_bad_input(run("run --builtin default --set training.data=" + dir_.string() + " --out " + (dir_ / "r").string()),
                   {"training.data", "not a regular file"});
  EXPECT_FALSE(fs::exists(dir_ / "r"));
}

TEST_F(ExitCodes, ASetIndexPastAMissingArraySaysSo) {
  expect_bad_input(run("estimate --builtin default --set network.overrides.5.latency=1ms"),
                   {"--set network.overrides.5.latency=1ms", "out of range"});
}

}  // namespace

namespace {

// A scenario is small: an array too long, nesting too deep or a file too large is
// refused with one short line (the limits in runtime/scenario/parse_internal.h).
TEST_F(ExitCodes, OversizedScenariosAreRefusedInOneShortLine) {
  std::string overrides = "{\"name\": \"x\", \"network\": {\"overrides\": [";
  for (int i = 0; i < 80000; ++i) overrides += std::string(i ? "," : "") + "{\"latency\": \"1ms\"}";
  const auto many = write("many.json", overrides + "]}}");
  expect_bad_input(run("validate " + many.string()), {"network.overrides", "more than 10000 elements"});

  const auto deep = write("deep.json", std::string(500000, '[') + std::string(500000, ']'));
  const auto r = run("validate " + deep.string());
  expect_bad_input(r, {deep.string(), "nested deeper than"});
  EXPECT_LT(r.err.size(), 300u);

  const auto large = write("large.json", "{\"name\": \"" + std::string(5 << 20, 'x') + "\"}");
  expect_bad_input(run("validate " + large.string()), {large.string(), "larger than"});
}

}  // namespace
