// DirLock (runtime/train/run_dir.h): a lock that had to create its directory, and
// the parents of it, removes what it created when nothing was written there; a
// directory a run wrote into, or one that was there before, stays.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "runtime/train/run_dir.h"
#include "tests/temp_dir.h"

namespace lowband::train {
namespace {

namespace fs = std::filesystem;

TEST(DirLock, RemovesTheEmptyDirectoriesItCreated) {
  const fs::path root = test_support::unique_test_temp_dir("lowband_dirlock");
  for (const std::string& tail : {std::string("a/b/out"), std::string("a/b/out/"), std::string("a/./b/out")}) {
    SCOPED_TRACE(tail);
    { const DirLock lock((root / tail).string(), "--out", /*create=*/true); }
    EXPECT_FALSE(fs::exists(root / "a"));
  }
  {  // written into: the run directory stays, and so do its parents
    const DirLock lock((root / "a/b/out").string(), "--out", true);
    std::ofstream(root / "a/b/out/summary.json") << "{}";
  }
  EXPECT_TRUE(fs::exists(root / "a/b/out/summary.json"));
  fs::remove_all(root / "a/b/out");
  {  // "a/b" was there before: only "out" was this lock's
    const DirLock lock((root / "a/b/out").string(), "--out", true);
  }
  EXPECT_TRUE(fs::is_directory(root / "a/b"));
  EXPECT_FALSE(fs::exists(root / "a/b/out"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace lowband::train
