// lowband-replay: the process sim::replay spawns (sim/replay.h). It reads the
// request (the network, the graphs, the options: sim/replay_wire.h) from its
// standard input, runs SimGrid on it, and writes the reply to file descriptor 3.
// Not a command for people: `lowband estimate` and `lowband run` start it.
#include <ext/stdio_filebuf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <istream>
#include <string>

#include "sim/replay_engine.h"

int main() {
  std::string reply;
  {
    __gnu_cxx::stdio_filebuf<char> buf(0, std::ios::in, 1 << 16);
    std::istream request(&buf);
    reply = lowband::sim::detail::reply_to(request);
  }
  size_t done = 0;
  while (done < reply.size()) {
    const ssize_t n = ::write(3, reply.data() + done, reply.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::perror("lowband-replay: writing the reply");
      return 1;
    }
    done += size_t(n);
  }
  return 0;
}
