#pragma once
// Under mpirun (`run`, `bench-comm`): the communicator over every process.
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "sim/collectives.h"

namespace lowband::cli {

// The communicator over mpirun's processes by `transport` ("mpi" or "nccl"; needs
// an MpiSession), and this process's GPU for the CUDA kernels: the NCCL rank's,
// else the node-local rank modulo the GPUs, so ranks on one node do not share a
// GPU while others idle. No usable NCCL (no GPU, not built) is an InputError
// naming --transport.
// all_reduce: the MPI transport's algorithm (parallel.all_reduce); NCCL chooses its own.
std::unique_ptr<comm::Communicator> rank_world(const std::string& transport,
                                               sim::AllReduceAlgorithm all_reduce = sim::AllReduceAlgorithm::ring);

}  // namespace lowband::cli
