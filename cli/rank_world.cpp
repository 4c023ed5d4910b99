#include "cli/rank_world.h"

#include <stdexcept>

#include "comm/mpi.h"
#include "comm/nccl.h"
#include "common/error.h"
#include "kernels/backend.h"
#include "kernels/device.h"

namespace lowband::cli {

std::unique_ptr<comm::Communicator> rank_world(const std::string& transport, sim::AllReduceAlgorithm all_reduce) {
  if (transport == "nccl") {
    std::unique_ptr<comm::NcclCommunicator> world;
    try {
      world = comm::nccl_world();
    } catch (const std::runtime_error& e) {
      throw InputError("--transport", std::string("nccl: ") + e.what());
    }
    kernels::set_default_cuda_device(world->device());
    return world;
  }
  if (const int gpus = kernels::cuda::device_count(); gpus > 0)
    kernels::set_default_cuda_device(comm::node_local_rank() % gpus);
  return comm::mpi_world(0, all_reduce);
}

}  // namespace lowband::cli
