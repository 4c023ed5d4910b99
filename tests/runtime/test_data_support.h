#pragma once
// Helpers for the data and tokenizer tests: the repository's data/ (the GPT-2 files
// and tinyshakespeare, committed; the larger corpora after scripts/get-data.sh) and
// scratch files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "runtime/data/gpt2_files.h"

namespace lowband::data::testing {

inline std::string data_dir() { return repository_data_dir(); }

// A fresh directory under the system temp dir, removed at the end of scope.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lowband_data_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

}  // namespace lowband::data::testing
