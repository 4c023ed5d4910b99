#pragma once
// The NCCL communicator: one GPU per MPI process (`mpirun -np P lowband run
// --transport nccl`, `lowband bench-comm --transport nccl`). NCCL comes with the
// CUDA toolkit (nccl.h, libnccl); a build without CUDA or without NCCL has the
// declarations only, and nccl_world() throws saying so.
//
// Keeps communicator.h's semantics:
// - The collectives' bytes move through NCCL between the ranks' GPUs (NVLink,
//   PCIe, InfiniBand or sockets, as NCCL chooses). The interface hands host
//   memory, so each collective stages its buffer through this rank's GPU: upload,
//   NCCL, download, on the communicator's own stream.
// - Sums are the canonical sums of every communicator, bit for bit: NCCL's own
//   reductions promise no order, so a reduce-scatter is NCCL moving segment r of
//   every rank to rank r (grouped ncclSend/ncclRecv) and this rank summing its
//   segments on the host in comm::ring_sum_order; an all-reduce is that
//   followed by an all-gather of the sums.
// - Point-to-point messages go over the MPI communicator it was built from: NCCL
//   has no tags and no probe, and an ncclSend holds its stream until the receiver
//   posts, where communicator.h's send never waits for the receiver.
// Every NCCL and CUDA call is checked: a failure throws std::runtime_error naming
// the call and NCCL's (or CUDA's) error string.
#include <memory>

#include "comm/communicator.h"

namespace lowband::comm {

// Whether this build has NCCL (CUDA toolkit with nccl.h found at configure time).
bool nccl_compiled();
// The CUDA devices this process sees (0 without NCCL in the build or without a GPU).
int nccl_devices();

class NcclCommunicator final : public Communicator {
 public:
  struct Impl;  // comm/nccl.cpp: the ncclComm_t, its stream and staging buffers, the MPI communicator
  explicit NcclCommunicator(std::unique_ptr<Impl> impl);
  ~NcclCommunicator() override;

  int device() const;  // this rank's CUDA device
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
  std::unique_ptr<Communicator> split(int color) override;

 private:
  std::unique_ptr<Impl> impl_;
};

// This process's rank among the MPI processes on its node (MPI_COMM_TYPE_SHARED);
// needs an MpiSession. Which GPU a rank takes: node_local_rank() % GPUs.
int node_local_rank();

// A communicator over all of mpirun's processes, this one on CUDA device
// `device` (< 0: node_local_rank() modulo the devices this process sees). Needs
// an MpiSession; collective over the processes. Throws std::runtime_error when
// NCCL is not built in, no GPU is usable, or NCCL refuses (two ranks of one node
// on one GPU: "Duplicate GPU detected").
std::unique_ptr<NcclCommunicator> nccl_world(int device = -1);

}  // namespace lowband::comm
