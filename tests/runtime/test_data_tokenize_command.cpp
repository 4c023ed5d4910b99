// `lowband tokenize` end to end: the .u16 it writes, its report, its errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/data/token_file.h"
#include "tests/runtime/test_data_support.h"
#include "tests/slurp.h"

namespace lowband::data {
namespace {

using testing::ScratchDir;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

using lowband::test_support::slurp;

Result run_lowband(const ScratchDir& dir, const std::string& args) {
  const std::string cmd = std::string(LOWBAND_BINARY) + " " + args + " >" + dir.file("stdout") + " 2>" +
                          dir.file("stderr");
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir.file("stdout")), slurp(dir.file("stderr"))};
}

TEST(TokenizeCommand, WritesByteIdsAndReportsCountAndSpeed) {
  const ScratchDir dir;
  testing::write_bytes(dir.file("in.txt"), "abc \xC3\xA9");
  const Result r = run_lowband(dir, "tokenize " + dir.file("in.txt") + " --tokenizer byte --out " + dir.file("o.u16"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_tokens(dir.file("o.u16")), (std::vector<TokenId>{'a', 'b', 'c', ' ', 0xC3, 0xA9}));
  EXPECT_NE(r.out.find("wrote 6 byte tokens"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;
}

TEST(TokenizeCommand, WritesGpt2Ids) {
  const ScratchDir dir;
  testing::write_bytes(dir.file("in.txt"), "Hello world");
  const Result r = run_lowband(dir, "tokenize " + dir.file("in.txt") + " --tokenizer gpt2 --gpt2-dir " +
                                        testing::data_dir() + " --out " + dir.file("o.u16"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_tokens(dir.file("o.u16")), (std::vector<TokenId>{15496, 995}));  // GPT-2's "Hello world"
}

TEST(TokenizeCommand, BadInputExitsWithStatus2NamingThePlaceAndWritesNothing) {
  const ScratchDir dir;
  testing::write_bytes(dir.file("in.txt"), "text");
  const std::string out = " --out " + dir.file("o.u16");
  Result r = run_lowband(dir, "tokenize " + dir.file("missing.txt") + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir.file("missing.txt")), std::string::npos) << r.err;
  r = run_lowband(dir, "tokenize " + dir.file("in.txt") + " --tokenizer gpt3" + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tokenizer"), std::string::npos) << r.err;
  r = run_lowband(dir, "tokenize " + dir.file("in.txt") + " --tokenizer gpt2 --gpt2-dir " + dir.path() + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--gpt2-dir"), std::string::npos) << r.err;
  r = run_lowband(dir, "tokenize " + dir.file("in.txt") + " --tokenizer byte --out " + dir.file("o.bin"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("o.u16")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("o.bin")));
}

}  // namespace
}  // namespace lowband::data
