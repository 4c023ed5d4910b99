#include "runtime/train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace lowband::train {
namespace fs = std::filesystem;

namespace {

// "runs/a/./b/" -> "runs/a/b": its parents are then its path's parents.
fs::path normal_dir(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  return p.has_filename() || !p.has_parent_path() ? p : p.parent_path();
}

}  // namespace

DirLock::DirLock(const std::string& dir, const std::string& place, bool create, bool inherit_by_children,
                 double wait_seconds, LockMode mode)
    : dir_(dir), mode_(mode) {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) {
    if (!create) throw InputError(place, "no directory " + dir_);
    if (fs::exists(dir_, ec)) throw InputError(place, dir_ + " is not a directory");
    fs::path root = normal_dir(dir_);  // the outermost directory missing
    while (root.has_parent_path() && root.parent_path() != root && !fs::exists(root.parent_path(), ec))
      root = root.parent_path();
    if (fs::create_directories(dir_, ec)) created_root_ = root.string();
    if (ec || !fs::is_directory(dir_)) throw InputError(place, "cannot create the directory " + dir_ + ": " + ec.message());
  }
  const std::string path = (fs::path(dir_) / kLockFile).string();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_seconds);
  for (;;) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | (inherit_by_children ? 0 : O_CLOEXEC), 0644);
    if (fd_ < 0) throw InputError(place, "cannot create the lock file " + path + ": " + std::strerror(errno));
    if (::flock(fd_, (mode == LockMode::shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0) {
      // The holder before us may have removed the file on its way out: then our lock
      // is on a file nobody else will open. Lock the one at the path.
      struct stat held{}, now{};
      if (::fstat(fd_, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
          held.st_dev == now.st_dev)
        return;
    } else if (errno != EWOULDBLOCK && errno != EINTR) {
      const int err = errno;
      ::close(fd_);
      throw InputError(place, "cannot lock " + path + ": " + std::strerror(err));
    } else if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd_);
      fd_ = -1;
      throw InputError(place, dir_ + " is in use by another lowband process (it holds " + path +
                                  "); wait for it to end, or give another directory");
    }
    ::close(fd_);
    fd_ = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

DirLock::DirLock(DirLock&& other) noexcept
    : dir_(std::move(other.dir_)), fd_(other.fd_), created_root_(std::move(other.created_root_)), mode_(other.mode_) {
  other.fd_ = -1;
}

DirLock::~DirLock() {
  if (fd_ < 0) return;
  if (mode_ == LockMode::shared) {
    ::close(fd_);
    return;
  }
  std::error_code ec;
  // Unlinked while still held: the next writer re-checks the path after locking.
  fs::remove(fs::path(dir_) / kLockFile, ec);
  // What this lock created and nothing filled, from the run directory out to the root it made.
  if (!created_root_.empty())
    for (fs::path p = normal_dir(dir_); !p.empty() && fs::is_empty(p, ec) && !ec; p = p.parent_path()) {
      fs::remove(p, ec);
      if (ec || p == fs::path(created_root_) || p.parent_path() == p) break;
    }
  ::close(fd_);
}

bool empty_but_lock(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename() != kLockFile) return false;
  return true;
}

void remove_stale_temp_files(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || at + 5 == name.size()) continue;
    if (name.find_first_not_of("0123456789", at + 5) != std::string::npos) continue;
    std::error_code ignored;
    if (entry.is_regular_file(ignored)) fs::remove(entry.path(), ignored);
  }
}

void check_restartable(const std::string& dir, const std::string& place) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "checkpoint.bin", ec))
    throw InputError(place, dir + " already holds a run (checkpoint.bin): continue it with --resume " + dir +
                                ", or give another directory");
  std::ifstream in(fs::path(dir) / "summary.json");
  if (!in) return;
  const auto summary = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  bool ended = false;
  int done = 0;
  try {  // someone else's summary.json of another shape: not a run's
    const int planned = summary.value("steps_planned", 0);
    done = summary.value("steps_done", 0);
    ended = summary.value("diverged", false) || (planned > 0 && done >= planned);
  } catch (const nlohmann::json::exception&) {
  }
  if (ended)
    throw InputError(place, dir + " already holds a run that ended (summary.json, " + std::to_string(done) +
                                " steps): give another directory");
}

}  // namespace lowband::train
