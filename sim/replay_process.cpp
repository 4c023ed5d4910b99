#include "sim/replay_process.h"

#include <ext/stdio_filebuf.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <ostream>
#include <stdexcept>

#include "sim/replay_wire.h"

extern char** environ;

namespace lowband::sim::detail {

namespace {

// $LOWBAND_REPLAY, else lowband-replay beside this program, else where the build put it.
std::string replay_executable() {
  if (const char* env = std::getenv("LOWBAND_REPLAY"); env && *env) return env;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string beside(self, size_t(n));
    beside = beside.substr(0, beside.rfind('/') + 1) + "lowband-replay";
    if (::access(beside.c_str(), X_OK) == 0) return beside;
  }
#ifdef LOWBAND_REPLAY_EXE
  if (::access(LOWBAND_REPLAY_EXE, X_OK) == 0) return LOWBAND_REPLAY_EXE;
#endif
  throw std::runtime_error("sim::replay: no lowband-replay beside this program" +
                           (n > 0 ? " (" + std::string(self, size_t(n)) + ")" : std::string()) +
                           " or where the build put it; build it (cmake --build build --target lowband-replay) or "
                           "set LOWBAND_REPLAY to its path");
}

// A pipe whose ends are close-on-exec and numbered above 3 (the replay process's
// 0 and 3 are made from them, so neither may already be one of those).
void high_pipe(int fds[2]) {
  int raw[2];
  if (::pipe2(raw, O_CLOEXEC) != 0) throw std::runtime_error(std::string("sim::replay: pipe: ") + std::strerror(errno));
  for (int i = 0; i < 2; ++i) {
    fds[i] = ::fcntl(raw[i], F_DUPFD_CLOEXEC, 4);
    ::close(raw[i]);
  }
  if (fds[0] < 0 || fds[1] < 0) throw std::runtime_error(std::string("sim::replay: fcntl: ") + std::strerror(errno));
}

// False when the pipe ended first.
bool read_exactly(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, n -= size_t(got);
  }
  return true;
}

// The replay process this process keeps, and the pipes to it.
class Server {
 public:
  std::string ask(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                  const ReplayOptions& options) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (owner_ != ::getpid()) start();  // first call, or a forked child of the process that started it
    if (!write_request(network, graphs, options)) failed("stopped reading the request");
    // The answer: whether the replay process ends after it (its child failed),
    // the reply's length, the reply.
    uint8_t ending = 0;
    uint64_t size = 0;
    if (!read_exactly(reply_fd_, &ending, 1) || !read_exactly(reply_fd_, &size, sizeof size))
      failed("ended before answering");
    std::string reply(size_t(size), '\0');
    if (!read_exactly(reply_fd_, reply.data(), reply.size())) failed("ended inside its answer");
    if (ending) forget();
    return reply;
  }

 private:
  void start() {
    // Another process's pipes (a fork's inheritance) are left to it: only this copy closes.
    if (request_fd_ >= 0) ::close(request_fd_), ::close(reply_fd_);
    request_fd_ = reply_fd_ = -1;
    exe_ = replay_executable();
    int request[2], reply[2];
    high_pipe(request);
    high_pipe(reply);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, request[0], 0);
    posix_spawn_file_actions_adddup2(&actions, reply[1], 3);
    // SimGrid writes nothing useful to stdout; stderr stays for its fatal messages.
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    char* argv[] = {const_cast<char*>(exe_.c_str()), nullptr};
    const int spawned = posix_spawn(&pid_, exe_.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(request[0]);
    ::close(reply[1]);
    if (spawned != 0) {
      ::close(request[1]);
      ::close(reply[0]);
      throw std::runtime_error("sim::replay: cannot start " + exe_ + ": " + std::strerror(spawned));
    }
    request_fd_ = request[1], reply_fd_ = reply[0], owner_ = ::getpid();
  }

  // The request down the pipe, SIGPIPE held back on this thread (a replay
  // process that is gone shows as a short write). False if it was not all taken.
  bool write_request(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                     const ReplayOptions& options) {
    sigset_t pipe_signal, old;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
    bool ok = false;
    {
      __gnu_cxx::stdio_filebuf<char> buf(::dup(request_fd_), std::ios::out, 1 << 16);  // closes its copy
      std::ostream out(&buf);
      wire::write_request(out, network, graphs, options);
      ok = bool(out.flush());
    }
    const timespec now{0, 0};
    while (sigtimedwait(&pipe_signal, nullptr, &now) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return ok;
  }

  // The replay process is ending: its pipes closed, it waited for; the next
  // request starts another. Its exit status.
  int forget() {
    ::close(request_fd_), ::close(reply_fd_);
    request_fd_ = reply_fd_ = -1;
    owner_ = -1;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }

  // The replay process is gone: say how.
  [[noreturn]] void failed(const std::string& what) {
    const int status = forget();
    const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                : "exited with status " + std::to_string(WEXITSTATUS(status));
    throw std::runtime_error("sim::replay: the replay process (" + exe_ + ") " + what + " and " + how +
                             " (SimGrid's own message, if any, is above on stderr)");
  }

  std::mutex mutex_;
  pid_t owner_ = -1, pid_ = -1;  // the process that started it, and its pid
  int request_fd_ = -1, reply_fd_ = -1;
  std::string exe_;
};

}  // namespace

std::string ask_replay_process(const NetworkSpec& network, const std::vector<const StepGraph*>& graphs,
                               const ReplayOptions& options) {
  static Server* server = new Server;  // for the process's life: it ends when the process does
  return server->ask(network, graphs, options);
}

}  // namespace lowband::sim::detail
