// lowband-replay: the replay process (sim/replay_process.h). lowband starts it
// once, on its first replay, and keeps it. For each request that arrives on its
// standard input (sim/replay_wire.h) it forks a child, which reads the request,
// runs SimGrid on it (a fresh engine: the child has run none) and hands back the
// reply; this process writes it to file descriptor 3 as
//   u8 ending (1: this process ends after it), u64 length, the reply's bytes.
// It has one thread, so its forks inherit no lock. It ends when its input does
// (lowband closed it, or ended), or after a child that failed to answer (the
// request's unread bytes would be taken for the next one). Not a command for
// people.
#include <ext/stdio_filebuf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <istream>
#include <string>

#include "common/atomic_file.h"
#include "sim/replay_engine.h"

namespace {

std::string read_all(int fd) {
  std::string out;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(chunk, size_t(n));
  }
  return out;
}

// Whether a request has begun to arrive (false: the input has ended).
bool request_waiting() {
  pollfd p{0, POLLIN, 0};
  while (::poll(&p, 1, -1) < 0)
    if (errno != EINTR) return false;
  int available = 0;
  return ::ioctl(0, FIONREAD, &available) == 0 && available > 0;
}

}  // namespace

int main() {
  ::signal(SIGPIPE, SIG_IGN);  // lowband gone: a failed write ends this process
  while (request_waiting()) {
    int child_out[2];
    if (::pipe2(child_out, O_CLOEXEC) != 0) return 1;
    const pid_t pid = ::fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      ::close(child_out[0]);
      std::string reply;
      {
        __gnu_cxx::stdio_filebuf<char> buf(0, std::ios::in, 1 << 16);
        std::istream request(&buf);
        reply = lowband::sim::detail::reply_to(request);
      }
      ::_exit(lowband::write_all(child_out[1], reply.data(), reply.size()) ? 0 : 1);
    }
    ::close(child_out[1]);
    std::string reply = read_all(child_out[0]);
    ::close(child_out[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const uint8_t ending = reply.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    if (ending) {
      const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                  : "exited with status " + std::to_string(WEXITSTATUS(status));
      reply = lowband::sim::detail::error_reply("sim::replay: the replay's SimGrid process " + how +
                                                " before replying (SimGrid's own message, if any, is above on stderr)");
    }
    const uint64_t size = reply.size();
    if (!lowband::write_all(3, reinterpret_cast<const char*>(&ending), 1) ||
        !lowband::write_all(3, reinterpret_cast<const char*>(&size), sizeof size) ||
        !lowband::write_all(3, reply.data(), reply.size()))
      return 1;
    if (ending) return 1;
  }
  return 0;
}
