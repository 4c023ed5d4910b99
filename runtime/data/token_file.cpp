#include "runtime/data/token_file.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "common/atomic_file.h"
#include "common/error.h"

namespace lowband::data {

std::vector<TokenId> read_tokens(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(path, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot open token file");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(path, "error while reading token file");
  if (bytes.size() % 2 != 0)
    throw InputError(path, "a .u16 token file holds 2 bytes per id, but this one has an odd byte count (" +
                               std::to_string(bytes.size()) + ")");
  std::vector<TokenId> ids(bytes.size() / 2);
  // Assembled byte by byte so the file reads the same on any host byte order.
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<TokenId>(static_cast<uint8_t>(bytes[2 * i]) |
                                  (static_cast<uint8_t>(bytes[2 * i + 1]) << 8));
  return ids;
}

void write_tokens(const std::string& path, const std::vector<TokenId>& ids) {
  std::string bytes(ids.size() * 2, '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    bytes[2 * i] = static_cast<char>(ids[i] & 0xFF);
    bytes[2 * i + 1] = static_cast<char>(ids[i] >> 8);
  }
  try {
    write_file_atomically(path, bytes);
  } catch (const std::runtime_error& e) {
    throw InputError(path, std::string("cannot write token file (") + e.what() + ")");
  }
}

bool is_token_file(const std::string& path) {
  const std::string suffix = ".u16";
  return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace lowband::data
