#include "runtime/data/gpt2_files.h"

#include <cstdlib>
#include <filesystem>

#include "common/error.h"

namespace lowband::data {

namespace {

namespace fs = std::filesystem;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

// LOWBAND_SOURCE_DIR is defined where CMake passes it; otherwise this file's own
// path (absolute in CMake builds) gives the repository root.
std::string repository_data_dir() {
#ifdef LOWBAND_SOURCE_DIR
  const fs::path root = LOWBAND_SOURCE_DIR;
#else
  const fs::path root = fs::path(__FILE__).parent_path().parent_path().parent_path();
#endif
  return (root / "data").string();
}

std::vector<std::string> gpt2_search_dirs(const std::string& data_path, const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return {explicit_dir};
  std::vector<std::string> dirs;
  if (!data_path.empty()) {
    const fs::path parent = fs::path(data_path).parent_path();
    dirs.push_back(parent.empty() ? "." : parent.string());
  }
  dirs.push_back(repository_data_dir());
  if (const char* env = std::getenv("LOWBAND_GPT2_DIR"); env != nullptr && *env != '\0') dirs.emplace_back(env);
  return dirs;
}

Gpt2Files find_gpt2_files(const std::string& data_path, const std::string& explicit_dir,
                          const std::string& place) {
  const std::vector<std::string> dirs = gpt2_search_dirs(data_path, explicit_dir);
  for (const std::string& dir : dirs) {
    for (const char* prefix : {"", "gpt2_"}) {
      const fs::path encoder = fs::path(dir) / (std::string(prefix) + "encoder.json");
      const fs::path merges = fs::path(dir) / (std::string(prefix) + "vocab.bpe");
      if (is_file(encoder) && is_file(merges)) return {encoder.string(), merges.string()};
    }
  }
  std::string looked;
  for (const std::string& dir : dirs) looked += (looked.empty() ? "" : ", ") + dir;
  throw InputError(place,
                   "the gpt2 tokenizer needs encoder.json and vocab.bpe (or gpt2_encoder.json and "
                   "gpt2_vocab.bpe); looked in: " + looked +
                   (explicit_dir.empty() ? ". Put them next to the data file or set LOWBAND_GPT2_DIR" : ""));
}

}  // namespace lowband::data
