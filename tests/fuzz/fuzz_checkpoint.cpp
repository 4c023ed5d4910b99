// libFuzzer target: the files a run reads back, checkpoint.bin and .u16 token
// files. The first byte picks the reader: 0 a token file, 1 a checkpoint as given,
// 2 a checkpoint whose header (length, checksum) is fixed up so that the payload
// parser is reached. Any error but lowband::InputError is a bug and stops the fuzzer.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/binary_io.h"
#include "common/error.h"
#include "runtime/data/token_file.h"
#include "runtime/train/checkpoint.h"

namespace {

// The readers take paths: each input goes through a file in this process's own directory.
struct ScratchDir {
  ScratchDir() : path((std::filesystem::temp_directory_path() / ("lowband_fuzz_" + std::to_string(::getpid()))).string()) {
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

std::string write_scratch(const std::string& name, const std::string& bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 3;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (mode == 0) {
      lowband::data::read_tokens(write_scratch("tokens.u16", bytes));
    } else {
      constexpr size_t kHeader = 32;  // magic, version, payload bytes, checksum
      if (mode == 2 && bytes.size() >= kHeader) {
        std::memcpy(bytes.data(), "LBCKPT\r\n", 8);
        const uint64_t payload = bytes.size() - kHeader;
        const uint64_t sum = lowband::binary::checksum64(bytes.data() + kHeader, payload);
        std::memcpy(bytes.data() + 16, &payload, 8);
        std::memcpy(bytes.data() + 24, &sum, 8);
      }
      lowband::train::read_checkpoint(write_scratch("checkpoint.bin", bytes));
    }
  } catch (const lowband::InputError&) {
  }
  return 0;
}
