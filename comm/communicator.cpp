#include "comm/communicator.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace lowband::comm {

size_t dtype_bytes(DType type) {
  switch (type) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i64: return 8;
    case DType::u8: return 1;
  }
  throw std::logic_error("comm: unknown DType " + std::to_string(static_cast<int>(type)));
}

std::vector<int64_t> offsets_of(const std::vector<int64_t>& counts) {
  std::vector<int64_t> offsets(counts.size() + 1, 0);
  for (size_t r = 0; r < counts.size(); ++r) offsets[r + 1] = offsets[r] + counts[r];
  return offsets;
}

void check_counts(const std::vector<int64_t>& counts, int ranks, const char* who, const char* call) {
  if (static_cast<int>(counts.size()) != ranks)
    throw std::logic_error(std::string(who) + ": " + call + " needs " + std::to_string(ranks) + " counts, got " +
                           std::to_string(counts.size()));
  for (int64_t c : counts)
    if (c < 0) throw std::logic_error(std::string(who) + ": " + call + " of a negative count");
}

std::unique_ptr<Communicator> Communicator::split_known(const std::vector<int>& colors) {
  if (colors.size() != static_cast<size_t>(size()))
    throw std::logic_error("split_known: " + std::to_string(colors.size()) + " colors for " + std::to_string(size()) +
                           " ranks");
  return split(colors[static_cast<size_t>(rank())]);
}

std::vector<int64_t> even_counts(int64_t total, int ranks) {
  if (ranks <= 0) throw std::logic_error("comm::even_counts: ranks must be >= 1, got " + std::to_string(ranks));
  if (total < 0) throw std::logic_error("comm::even_counts: total must be >= 0, got " + std::to_string(total));
  std::vector<int64_t> counts(static_cast<size_t>(ranks), total / ranks);
  for (int64_t r = 0; r < total % ranks; ++r) ++counts[static_cast<size_t>(r)];
  return counts;
}

namespace {
// Blocks of kBlock elements: the accumulator stays in L1 and the inner loops
// vectorise (elementwise, so the order over ranks is untouched). Writing `out`
// only after a block is summed lets out alias any of the inputs.
template <class T> void sum_typed(const std::vector<const void*>& in, void* out_v, int64_t count) {
  constexpr int64_t kBlock = 1024;
  T acc[kBlock];
  T* out = static_cast<T*>(out_v);
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t n = std::min(kBlock, count - begin);
    const T* first = static_cast<const T*>(in[0]) + begin;
    for (int64_t i = 0; i < n; ++i) acc[i] = first[i];
    for (size_t r = 1; r < in.size(); ++r) {
      const T* x = static_cast<const T*>(in[r]) + begin;
      for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
    }
    std::memcpy(out + begin, acc, static_cast<size_t>(n) * sizeof(T));
  }
}
}  // namespace

std::vector<int> ring_sum_order(int segment, int ranks) {
  if (ranks <= 0 || segment < 0 || segment >= ranks)
    throw std::logic_error("comm::ring_sum_order: segment " + std::to_string(segment) + " of " +
                           std::to_string(ranks) + " ranks");
  std::vector<int> order(static_cast<size_t>(ranks));
  for (int j = 0; j < ranks; ++j) order[static_cast<size_t>(j)] = (segment + 1 + j) % ranks;
  return order;
}

void sum_in_order(const std::vector<const void*>& in, void* out, int64_t count, DType type) {
  if (in.empty()) throw std::logic_error("comm::sum_in_order: no inputs");
  if (count < 0) throw std::logic_error("comm::sum_in_order: negative count " + std::to_string(count));
  switch (type) {
    case DType::f32: return sum_typed<float>(in, out, count);
    case DType::f64: return sum_typed<double>(in, out, count);
    case DType::i64: return sum_typed<int64_t>(in, out, count);
    case DType::u8: break;
  }
  throw std::logic_error("comm::sum_in_order: no sum of u8 (bytes are for gathers and broadcasts)");
}

void sum_in_ring_order(const std::vector<const void*>& by_rank, void* out, const std::vector<int64_t>& counts,
                       DType type) {
  const int P = static_cast<int>(by_rank.size());
  if (P == 0 || counts.size() != by_rank.size())
    throw std::logic_error("comm::sum_in_ring_order: " + std::to_string(by_rank.size()) + " buffers, " +
                           std::to_string(counts.size()) + " counts");
  const size_t esize = dtype_bytes(type);
  int64_t offset = 0;
  for (int s = 0; s < P; ++s) {
    std::vector<const void*> in;
    for (int r : ring_sum_order(s, P))
      in.push_back(static_cast<const uint8_t*>(by_rank[static_cast<size_t>(r)]) + static_cast<size_t>(offset) * esize);
    sum_in_order(in, static_cast<uint8_t*>(out) + static_cast<size_t>(offset) * esize, counts[static_cast<size_t>(s)],
                 type);
    offset += counts[static_cast<size_t>(s)];
  }
}

}  // namespace lowband::comm
