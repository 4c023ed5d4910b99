#include "comm/null.h"

#include <stdexcept>

namespace lowband::comm {

NullCommunicator::NullCommunicator(int rank, int size) : rank_(rank), size_(size) {
  if (size < 1 || rank < 0 || rank >= size)
    throw std::logic_error("null communicator: rank " + std::to_string(rank) + " of " + std::to_string(size));
}

void NullCommunicator::check_peer(int peer, const char* call) const {
  if (peer < 0 || peer >= size_)
    throw std::logic_error(std::string("null communicator: ") + call + " with rank " + std::to_string(peer) +
                           " of " + std::to_string(size_));
}

void NullCommunicator::send(int dst, int, const void*, size_t, const Wire&) { check_peer(dst, "send"); }
void NullCommunicator::recv(int src, int, void*, size_t, const Wire&) { check_peer(src, "recv"); }

void NullCommunicator::recv_message(int src, int, std::vector<uint8_t>& out, const Wire&) {
  check_peer(src, "recv_message");
  out.clear();
}

void NullCommunicator::all_reduce_sum(void*, int64_t, DType, const Wire&) {}

void NullCommunicator::all_gather(const void*, void*, const std::vector<int64_t>& counts, DType, const Wire&) {
  check_counts(counts, size_, "null communicator", "all_gather");
}

void NullCommunicator::reduce_scatter_sum(const void*, void*, const std::vector<int64_t>& counts, DType,
                                          const Wire&) {
  check_counts(counts, size_, "null communicator", "reduce_scatter_sum");
}

void NullCommunicator::broadcast(void*, int64_t, DType, int root, const Wire&) { check_peer(root, "broadcast"); }

std::unique_ptr<Communicator> NullCommunicator::split(int) {
  throw std::logic_error("null communicator: split needs every rank's colour, which a dry rank does not see");
}

std::unique_ptr<Communicator> NullCommunicator::split_known(const std::vector<int>& colors) {
  if (colors.size() != size_t(size_))
    throw std::logic_error("null communicator: " + std::to_string(colors.size()) + " colors for " +
                           std::to_string(size_) + " ranks");
  const int color = colors[size_t(rank_)];
  if (color < 0) return nullptr;
  int rank = 0, size = 0;
  for (int r = 0; r < size_; ++r)
    if (colors[size_t(r)] == color) rank += r < rank_, ++size;
  return std::make_unique<NullCommunicator>(rank, size);
}

}  // namespace lowband::comm
