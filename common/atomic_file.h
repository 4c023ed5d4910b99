#pragma once
// Outputs are written atomically: to a temporary file beside the target, then
// renamed over it, so a reader never sees a half-written file and a failed run
// leaves the old file (or none) in place.
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace lowband {

inline void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out << contents;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error("failed writing " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

}  // namespace lowband
