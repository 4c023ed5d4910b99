#pragma once
// The MPI communicator: one rank per process, started by `mpirun -np P lowband ...`
// (Debian's Open MPI). Keeps communicator.h's semantics over MPI:
// - send copies the payload into a buffer of its own and starts MPI_Isend; the
//   send completes lazily (tested on later calls, waited for by flush() and the
//   destructor), so send never waits for the receiver.
// - recv probes first (MPI_Mprobe) so a message of another size is an error of use
//   (std::logic_error), not a truncation.
// - Collectives move bytes the way the step graph models them (sim/collectives.h,
//   comm/recording.cpp): all_gather and reduce_scatter_sum are rings of P-1 rounds
//   (each rank sends one segment to rank+1 while receiving one from rank-1, (P-1)/P
//   of the buffer per rank), all_reduce_sum is the ring reduce-scatter then the ring
//   all-gather, broadcast is direct sends from the root. All over point-to-point
//   messages on a duplicate of the communicator, never MPI's own collectives: Open
//   MPI's default all-gather took 2.4x its ring on the testbed and its reductions
//   promise no order. The ring adds segment s in ring_sum_order(s, P), as the
//   in-process communicator does, so the sums are bit for bit the in-process ones
//   (analysis/network-fidelity/train-step.md).
// - Messages beyond what one MPI call takes (an int count) go as several.
// - A progress thread (one per process, MpiSession's) keeps calling into MPI while
//   the rank computes, so sends and arriving messages move as the step graph
//   assumes they do; each deferred collective (Wire::deferred, a gradient bucket)
//   runs on a thread of its own while the caller goes on, beside the other
//   deferred ones, as in the graph; wait_deferred joins them. Each collective has
//   its own tag (its sequence number on the communicator), so concurrent ones
//   never match each other's messages; the sums are the same bits either way.
// Every MPI call is checked (MPI_ERRORS_RETURN): a failure throws
// std::runtime_error naming the call and MPI's error string.
#include <cstdint>
#include <memory>

#include "comm/communicator.h"
#include "sim/collectives.h"

namespace lowband::comm {

// MPI_Init_thread (MPI_THREAD_MULTIPLE) and the progress thread on construction,
// MPI_Finalize on destruction. One per process. LOWBAND_MPI_PROGRESS=0 in the
// environment: MPI_THREAD_SERIALIZED and no progress thread (every call
// completes before it returns; for measuring what the thread buys), as where MPI
// does not give MPI_THREAD_MULTIPLE (then a line on stderr says so).
class MpiSession {
 public:
  explicit MpiSession(int* argc = nullptr, char*** argv = nullptr);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

// Whether this process's MpiSession runs the progress thread.
bool mpi_progress_thread();

// Whether this process was started by mpirun/mpiexec (Open MPI's
// OMPI_COMM_WORLD_SIZE or a PMI launcher's PMI_SIZE in the environment).
bool launched_by_mpirun();

// Ends every process of the job with `exit_code` (MPI_Abort on MPI_COMM_WORLD):
// a rank that fails alone must not leave the others waiting in a collective.
[[noreturn]] void abort_job(int exit_code);

class MpiCommunicator final : public Communicator {
 public:
  struct Impl;  // comm/mpi.cpp: the MPI_Comm and the sends in flight
  explicit MpiCommunicator(std::unique_ptr<Impl> impl);
  ~MpiCommunicator() override;  // wait_deferred(), flush(), then MPI_Comm_free

  // Waits until every send of this communicator has completed.
  void flush();

  int rank() const override;
  int size() const override;
  std::string describe() const override;
  void send(int dst, int tag, const void* data, size_t bytes, const Wire& wire) override;
  void recv(int src, int tag, void* data, size_t bytes, const Wire& wire) override;
  void recv_message(int src, int tag, std::vector<uint8_t>& out, const Wire& wire) override;
  void all_reduce_sum(void* data, int64_t count, DType type, const Wire& wire) override;
  void all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                  const Wire& wire) override;
  void reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                          const Wire& wire) override;
  void broadcast(void* data, int64_t count, DType type, int root, const Wire& wire) override;
  void wait_deferred() override;  // every deferred collective of the process
  std::unique_ptr<Communicator> split(int color) override;
  // Keeps each group (by every rank's color) for the communicator's lifetime.
  std::unique_ptr<Communicator> split_known(const std::vector<int>& colors) override;

 private:
  std::unique_ptr<Impl> impl_;
};

// A communicator over all of mpirun's processes (a duplicate of MPI_COMM_WORLD);
// needs an MpiSession. max_elements_per_call: the most elements one MPI call
// moves (<= 0: what an int count holds); small values only exercise the
// several-calls path in tests. all_reduce: how all_reduce_sum moves its bytes
// (parallel.all_reduce; its splits inherit it): the same sums either way.
std::unique_ptr<MpiCommunicator> mpi_world(int64_t max_elements_per_call = 0,
                                           sim::AllReduceAlgorithm all_reduce = sim::AllReduceAlgorithm::ring);

}  // namespace lowband::comm
