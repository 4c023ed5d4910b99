#pragma once
// A transport that moves nothing, for dry runs (shapes only: kernels::Device::dry,
// LayoutTrainer run dry, runtime/parallel/dry_steps.h): sends complete at once, receives deliver nothing
// (recv leaves the buffer as it is, recv_message leaves `out` empty), collectives
// return at once with the data untouched. Wrapped by comm::RecordingCommunicator
// it still logs every call with its bytes, so the ranks' programs can run one
// after another on one thread, each into its own RankLog, and
// assemble_step_graph matches them as it does a recorded step. It suits only
// programs whose control flow depends on no received value, and where a receiver
// must know what a message held (its size, to pass it on), the receiver states it
// (ContextAttention's receives).
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace lowband::comm {

class NullCommunicator final : public Communicator {
 public:
  NullCommunicator(int rank, int size);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override { return "null (dry run)"; }
  void send(int dst, int tag, const void* data, size_t bytes, const Wire& wire) override;
  void recv(int src, int tag, void* data, size_t bytes, const Wire& wire) override;
  void recv_message(int src, int tag, std::vector<uint8_t>& out, const Wire& wire) override;
  void all_reduce_sum(void* data, int64_t count, DType type, const Wire& wire) override;
  void all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                  const Wire& wire) override;
  void reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                          const Wire& wire) override;
  void broadcast(void* data, int64_t count, DType type, int root, const Wire& wire) override;
  // The other ranks' colours are not known on one rank: std::logic_error.
  std::unique_ptr<Communicator> split(int color) override;
  // Where every rank's colour is given (a layout's groups), the group's null
  // communicator: this rank's place among the ranks of its colour.
  std::unique_ptr<Communicator> split_known(const std::vector<int>& colors) override;

  using Communicator::all_reduce_sum;
  using Communicator::broadcast;

 private:
  void check_peer(int peer, const char* call) const;

  int rank_, size_;
};

}  // namespace lowband::comm
