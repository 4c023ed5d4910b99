#pragma once
// Outputs are written atomically: to a temporary file beside the target, then
// renamed over it, so a reader never sees a half-written file and a failed run
// leaves the old file (or none) in place. A file that cannot be written (no such
// directory, a directory in its place, a full disk) is an InputError naming it:
// the user can fix that (exit status 2).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/error.h"

namespace lowband {

// Writes all of `data` to `fd`; false (errno set) when it could not.
inline bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    data += n;
    size -= size_t(n);
  }
  return true;
}

inline void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path, std::string("cannot write: ") + std::strerror(errno));
  const bool written = write_all(fd, contents.data(), contents.size());
  const int write_errno = errno;
  if (::close(fd) != 0 || !written) {
    std::remove(tmp.c_str());
    throw InputError(path, std::string("cannot write: ") + std::strerror(written ? errno : write_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw InputError(path, std::string("cannot write: ") + std::strerror(err));
  }
}

}  // namespace lowband
