#pragma once
// Under mpirun (`run`, `bench-comm`): the communicator over every process.
#include <memory>
#include <string>

#include "comm/communicator.h"

namespace lowband::cli {

// The communicator over mpirun's processes by `transport` ("mpi" or "nccl"; needs
// an MpiSession), and this process's GPU for the CUDA kernels: the NCCL rank's,
// else the node-local rank modulo the GPUs, so ranks on one node do not share a
// GPU while others idle. No usable NCCL (no GPU, not built) is an InputError
// naming --transport.
std::unique_ptr<comm::Communicator> rank_world(const std::string& transport);

}  // namespace lowband::cli
