#pragma once
// The in-process communicator: P ranks as P threads of one process, messages
// through mailboxes, collectives through shared memory.
//
//   comm::InProcessWorld world(4);
//   world.run([&](comm::Communicator& comm) { ...the rank's program... });
//
// run() starts one thread per rank (rank r gets the world's communicator r) and
// returns when every rank's function has returned. When a rank throws, the ranks
// blocked in (or later entering) a communicator call are woken and throw
// comm::Aborted; run() then rethrows the exception that started it (the lowest
// rank's when several threw their own). When every unfinished rank waits on a
// call no other rank can satisfy (a deadlock), run() throws std::logic_error
// naming what each rank waits for. run() never hangs on a communication error.
//
// The baton (on by default): at most one rank thread computes at a time. A rank
// holds the world's baton while it runs and gives it up only while it waits in
// a communicator call (a recv whose message has not arrived, a collective that
// waits for the others) and when its function returns; the baton then goes to
// the lowest-numbered rank that can continue. Why: each rank's kernels use
// OpenMP over every core, so free-running rank threads would share the cores and
// each rank's compute timings would mean nothing; with the baton every rank's
// kernels get the whole machine, as a lone trainer's do. The numbers never depend
// on who runs when (messages are FIFO per (source, tag), reductions are summed in
// ring order), only the interleaving does. InProcessWorld(P, false) lets the
// threads run freely (communication benchmarks, tests of the synchronisation).
//
// Message passing: send copies the payload into the (communicator, source,
// destination, tag) mailbox and returns; recv takes the oldest message there and
// throws std::logic_error if its size differs. Collectives: each rank deposits
// its pointers, all wait for the last, each computes its share of the result from
// the others' buffers, all wait again, each copies its result out. split()
// communicators share the world's synchronisation; each has its own id, so their
// messages and collectives never mix with another communicator's.
#include <functional>
#include <memory>
#include <stdexcept>

#include "comm/communicator.h"

namespace lowband::comm {

// Thrown by a rank's communicator calls once another rank has failed.
class Aborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InProcessWorld {
 public:
  explicit InProcessWorld(int ranks, bool baton = true);
  ~InProcessWorld();
  InProcessWorld(const InProcessWorld&) = delete;
  InProcessWorld& operator=(const InProcessWorld&) = delete;

  int size() const { return ranks_; }
  bool baton() const { return baton_; }
  // Runs fn on every rank, one thread each; see above for errors. Not reentrant.
  void run(const std::function<void(Communicator&)>& fn);

  struct State;  // comm/in_process.cpp

 private:
  int ranks_;
  bool baton_;
};

}  // namespace lowband::comm
