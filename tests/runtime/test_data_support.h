#pragma once
// Helpers for the data and tokenizer tests: the shared data directory (the GPT-2
// files and corpora, never copied into the repository) and scratch files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace lowband::data::testing {

inline std::string shared_data_dir() {
  return (std::filesystem::path(LOWBAND_SOURCE_DIR) / ".." / "shared" / "data").lexically_normal().string();
}

inline bool shared_data_present() {
  const std::string d = shared_data_dir();
  return std::filesystem::exists(d + "/gpt2_encoder.json") && std::filesystem::exists(d + "/gpt2_vocab.bpe") &&
         std::filesystem::exists(d + "/tinyshakespeare.txt") &&
         std::filesystem::exists(d + "/tinyshakespeare.gpt2.u16");
}

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
