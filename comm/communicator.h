#pragma once
// A communicator: the one seam between a rank's trainer and everything that
// moves data between ranks. Implementations: in-process (threads and mailboxes,
// comm/in_process.h), MPI (comm/mpi.h), and recording (comm/recording.h: wraps any
// other and turns every call into step-graph transfers with their real bytes).
//
// Semantics every implementation keeps, so that a layout gives the same numbers
// on each of them, bit for bit:
// - send never waits for the receiver (the payload is copied or buffered before
//   it returns); recv waits for the message with the same (source, tag). Messages
//   from one source with one tag arrive in the order they were sent.
// - Collectives are called by every rank of the communicator in the same order.
//   Every reduction sums in ring order, the order of a ring reduce-scatter: the
//   result is split into segments (reduce_scatter_sum: counts; all_reduce_sum:
//   even_counts(count, P)) and segment s is ((x[s+1] + x[s+2]) + ...) + x[s], ranks
//   mod P: the partial sum starts at rank s+1 and travels r -> r+1 round the ring,
//   each rank adding its own, until it reaches s (ring_sum_order). The same on every
//   rank and in every implementation (MPI's own reductions promise no order, so the
//   MPI communicator does not use them for floating point). So an element's order
//   depends on where it sits in the call: one buffer reduced whole or in pieces
//   gives sums that agree only to rounding when P > 2 (two terms add alike either way).
// - Every call carries a Wire label: what it carries ("kv", "dkv", "grad_sync",
//   "loss", ...: the step graph's kind tag) and, where the modelled link carries
//   another size than the buffer in memory, the bytes on the wire. Only the
//   recording communicator looks at it.
// Errors of use (sizes that do not match, a rank out of range) throw
// std::logic_error; a failed transport throws std::runtime_error naming the call.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lowband::comm {

enum class DType : uint8_t { f32, f64, i64, u8 };
size_t dtype_bytes(DType type);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }

// What a call carries, for the step graph. `bytes` is the modelled size on the
// wire when it differs from the buffer in memory (values held as float32 but sent
// at the model's wire precision, a codec's message): for send, the message; for a
// collective, the whole buffer of one rank (S in sim/collectives.h). < 0: the
// buffer's own size.
// `deferred` (collectives only): nothing the caller does next needs the result
// until it says so (Communicator::wait_deferred, and in the recorded graph
// comm::RankLog::join_deferred; a DDP gradient bucket: the backward and its
// exchanges go on while it travels). The caller neither reads nor writes the
// buffers until then: the MPI communicator returns at once and moves the bytes
// on its progress thread; the others complete the call before returning.
// `background` (with deferred): an exchange that runs beside whole training
// steps (an outer sync merged steps later: sync/outer_sync.h). Transports treat
// it as deferred; the recorded graph joins it only at RankLog::join_background,
// not at the step's join_deferred, and not at the step's end.
// `relay` (all_gather only): the modelled exchange goes through a relay node
// (sim::relay_all_gather: one upload per rank, the relay's fan-out); transports
// still do their own all-gather, so the numbers do not change.
struct Wire {
  const char* kind;
  double bytes = -1;
  bool deferred = false;
  bool background = false;
  bool relay = false;
  Wire(const char* k) : kind(k) {}  // NOLINT(google-explicit-constructor): "kv" reads as a label
  Wire(const char* k, double wire_bytes, bool defer = false) : kind(k), bytes(wire_bytes), deferred(defer) {}
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string describe() const = 0;

  // Point to point; `tag` >= 0 tells concurrent streams between one pair apart.
  virtual void send(int dst, int tag, const void* data, size_t bytes, const Wire& wire) = 0;
  virtual void recv(int src, int tag, void* data, size_t bytes, const Wire& wire) = 0;
  // A message whose size the receiver does not know (a codec's packed K/V
  // blocks): `out` is resized to it (MPI: MPI_Probe, then MPI_Get_count).
  virtual void recv_message(int src, int tag, std::vector<uint8_t>& out, const Wire& wire) = 0;

  // data (count elements) <- the sum over the ranks, in ring order over the
  // even_counts(count, P) segments (a reduce-scatter, then an all-gather).
  virtual void all_reduce_sum(void* data, int64_t count, DType type, const Wire& wire) = 0;
  // Rank r contributes counts[r] elements (in); out gets all of them in rank order.
  virtual void all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                          const Wire& wire) = 0;
  // in: sum(counts) elements on every rank; out (counts[rank] elements) <- the
  // sum of segment `rank` in ring order (ring_sum_order(rank, P)).
  virtual void reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts,
                                  DType type, const Wire& wire) = 0;
  // data (count elements) <- root's.
  virtual void broadcast(void* data, int64_t count, DType type, int root, const Wire& wire) = 0;

  // Returns once every deferred collective this rank has started (on this
  // communicator or any other of the rank's) has finished; rethrows the first
  // failure of one. At once where calls complete before returning.
  virtual void wait_deferred() {}

  // Every rank calls split together: ranks with the same color >= 0 form a new
  // communicator, ranked in this one's rank order; color < 0 gets nullptr.
  virtual std::unique_ptr<Communicator> split(int color) = 0;
  // The same where the caller knows every rank's color (colors[r], the same
  // vector on every rank: a layout's groups): no exchange of colors, and a
  // transport may keep the group for the next split with the same colors (MPI:
  // creating a communicator costs several round trips on a slow link).
  virtual std::unique_ptr<Communicator> split_known(const std::vector<int>& colors);

  // Typed conveniences.
  template <class T> void all_reduce_sum(T* data, int64_t count, const Wire& wire) {
    all_reduce_sum(static_cast<void*>(data), count, dtype_of<T>(), wire);
  }
  template <class T> void broadcast(T* data, int64_t count, int root, const Wire& wire) {
    broadcast(static_cast<void*>(data), count, dtype_of<T>(), root, wire);
  }
};

// The counts of `total` elements split over `ranks` as evenly as possible, the
// first total % ranks ranks holding one more (reduce-scatter and all-gather of a
// buffer that does not divide evenly).
std::vector<int64_t> even_counts(int64_t total, int ranks);

// offsets[r] = counts[0] + ... + counts[r - 1], for r = 0 .. counts.size() (the
// last is the total): where each rank's segment starts in a gathered buffer.
std::vector<int64_t> offsets_of(const std::vector<int64_t>& counts);

// Throws std::logic_error "<who>: <call> needs <ranks> counts, got N" or "... of a
// negative count": the per-rank counts of an all_gather or reduce_scatter_sum.
void check_counts(const std::vector<int64_t>& counts, int ranks, const char* who, const char* call);

// The ranks whose values segment `segment` sums, in the order it sums them:
// segment+1, segment+2, ..., P-1, 0, ..., segment (a ring reduce-scatter's order).
std::vector<int> ring_sum_order(int segment, int ranks);

// out[i] = ((in[0][i] + in[1][i]) + ...): the inputs added in the order given
// (the one addition every implementation uses). out may be any of the inputs.
void sum_in_order(const std::vector<const void*>& in, void* out, int64_t count, DType type);

// out (sum(counts) elements) <- what a reduction with these segments gives every
// rank: segment s of the by_rank buffers (one per rank, sum(counts) elements each)
// summed in ring_sum_order(s, P). all_reduce_sum's result for counts =
// even_counts(count, P); the reference for tests and for code that adds up
// gathered values as a reduction would.
void sum_in_ring_order(const std::vector<const void*>& by_rank, void* out, const std::vector<int64_t>& counts,
                       DType type);

}  // namespace lowband::comm
