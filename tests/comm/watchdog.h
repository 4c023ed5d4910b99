#pragma once
// A test that could hang (a lost wake-up, a deadlock not detected) fails instead:
// the process exits with status 1 once `seconds` pass.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

namespace lowband::test {

template <class F> void within_seconds(int seconds, F&& body) {
  std::promise<void> done;
  std::future<void> finished = done.get_future();
  std::thread watchdog([&finished, seconds] {
    if (finished.wait_for(std::chrono::seconds(seconds)) == std::future_status::timeout) {
      std::fprintf(stderr, "watchdog: test still running after %d s (hung?)\n", seconds);
      std::_Exit(1);
    }
  });
  try {
    body();
  } catch (...) {
    done.set_value();
    watchdog.join();
    throw;
  }
  done.set_value();
  watchdog.join();
}

}  // namespace lowband::test
