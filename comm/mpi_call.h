#pragma once
// The MPI communicator's collectives as the step graph models them (comm/mpi.h):
// rings and direct exchanges over point-to-point messages, one Call per
// collective. Internal to comm/mpi.cpp (it needs <mpi.h>, which no other header
// of lowband's includes).

// The C API only (MPI::MPI_C): no C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "sim/collectives.h"

namespace lowband::comm::mpi_call {

inline void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = std::snprintf(text, sizeof text, "error %d", rc);
  throw std::runtime_error(std::string("MPI: ") + call + " failed: " + std::string(text, static_cast<size_t>(length)));
}

inline MPI_Datatype mpi_type(DType type) {
  switch (type) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i64: return MPI_INT64_T;
    case DType::u8: return MPI_UINT8_T;
  }
  throw std::logic_error("MPI comm: unknown DType");
}

// How often the progress thread calls into MPI while nothing else does: often
// enough that a send buffer (MiBs, draining in ms at 1 Gbit/s) never runs dry,
// rarely enough to cost a few per cent of a core.
constexpr std::chrono::microseconds kProgressInterval{100};

// One collective's messages and scratch. A deferred collective runs on a thread
// of its own beside the caller's next calls, so nothing is shared between calls:
// each has its own tag on the collectives' communicator (the call's sequence
// number there, the same on every rank since every rank calls the collectives in
// one order) and its own buffers.
struct Call {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1, tag = 0;
  int64_t max_elements = INT_MAX;
  bool poll = false;  // a deferred one: test and nap instead of MPI_Waitall's spin
  std::vector<MPI_Request> requests;

  // Starts count elements to `to` (or from `from`), in messages of at most
  // max_elements (an int count); none when count is 0. Sender and receiver cut
  // alike, and MPI keeps one pair's messages of one tag in order.
  void post_send(const void* data, int64_t count, DType type, int to) {
    const size_t esize = dtype_bytes(type);
    for (int64_t at = 0; at < count; at += max_elements)
      check(MPI_Isend(static_cast<const uint8_t*>(data) + at * esize, static_cast<int>(std::min(max_elements, count - at)),
                      mpi_type(type), to, tag, comm, &requests.emplace_back()),
            "MPI_Isend (a collective)");
  }
  void post_recv(void* data, int64_t count, DType type, int from) {
    const size_t esize = dtype_bytes(type);
    for (int64_t at = 0; at < count; at += max_elements)
      check(MPI_Irecv(static_cast<uint8_t*>(data) + at * esize, static_cast<int>(std::min(max_elements, count - at)),
                      mpi_type(type), from, tag, comm, &requests.emplace_back()),
            "MPI_Irecv (a collective)");
  }
  void wait_all(const char* what) {
    int rc = MPI_SUCCESS;
    if (poll) {
      for (int done = 0; rc == MPI_SUCCESS;) {
        rc = MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
        if (done) break;
        std::this_thread::sleep_for(kProgressInterval);
      }
    } else {
      rc = MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    }
    requests.clear();
    check(rc, what);
  }
  // One ring round: send to the successor while receiving from the predecessor.
  void ring_round(const void* send, int64_t send_count, void* recv, int64_t recv_count, DType type,
                  const char* what) {
    post_recv(recv, recv_count, type, (rank + size - 1) % size);
    post_send(send, send_count, type, (rank + 1) % size);
    wait_all(what);
  }

  // Ring reduce-scatter (sim/collectives.h's ring_reduce_scatter): in round k,
  // rank r sends the partial sum of segment r-k-1 to r+1 and adds its own values
  // to the partial of segment r-k-2 it receives from r-1; after P-1 rounds it
  // holds segment r summed in ring_sum_order(r, P). Each rank sends the other
  // ranks' segments once: (P-1)/P of the buffer on an even split.
  void ring_reduce_scatter(const uint8_t* in, void* out, const std::vector<int64_t>& counts, DType type) {
    const size_t esize = dtype_bytes(type);
    const std::vector<int64_t> offsets = offsets_of(counts);
    const auto seg = [&](int k) { return static_cast<size_t>(((k % size) + size) % size); };
    const int64_t mine = counts[seg(rank)];
    if (size == 1) {
      if (mine > 0) std::memmove(out, in, static_cast<size_t>(mine) * esize);
      return;
    }
    const size_t largest = static_cast<size_t>(*std::max_element(counts.begin(), counts.end())) * esize;
    std::vector<uint8_t> ring_a(largest), ring_b(largest);  // the partial sums received, alternately
    const uint8_t* send = in + offsets[seg(rank - 1)] * esize;  // round 0: this rank's own values
    for (int k = 0; k + 1 < size; ++k) {
      const size_t to = seg(rank - k - 1), from = seg(rank - k - 2);
      uint8_t* received = (k % 2 ? ring_b : ring_a).data();
      ring_round(send, counts[to], received, counts[from], type, "MPI_Waitall (ring reduce-scatter)");
      sum_in_order({received, in + offsets[from] * esize}, received, counts[from], type);
      send = received;
    }
    // out may overlap in: written only now, from the partial of segment `rank`.
    if (mine > 0) std::memcpy(out, send, static_cast<size_t>(mine) * esize);
  }

  // Direct reduce-scatter (sim::direct_all_reduce's first half): every rank sends
  // segment j to rank j at once; rank r sums the P copies of its segment in
  // ring_sum_order(r, P), as the ring would have added them, so the same bits.
  void direct_reduce_scatter(const uint8_t* in, void* out, const std::vector<int64_t>& counts, DType type) {
    const size_t esize = dtype_bytes(type);
    const std::vector<int64_t> offsets = offsets_of(counts);
    const int64_t mine = counts[static_cast<size_t>(rank)];
    std::vector<std::vector<uint8_t>> blocks(static_cast<size_t>(size));  // each rank's copy of this rank's segment
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      blocks[static_cast<size_t>(r)].resize(static_cast<size_t>(mine) * esize);
      post_recv(blocks[static_cast<size_t>(r)].data(), mine, type, r);
      post_send(in + offsets[static_cast<size_t>(r)] * esize, counts[static_cast<size_t>(r)], type, r);
    }
    wait_all("MPI_Waitall (direct reduce-scatter)");
    std::vector<const void*> copies;
    for (int r : ring_sum_order(rank, size))
      copies.push_back(r == rank ? in + offsets[static_cast<size_t>(rank)] * esize : blocks[static_cast<size_t>(r)].data());
    if (mine > 0) sum_in_order(copies, out, mine, type);
  }

  // Direct all-gather (its second half): every rank sends its segment to every
  // other at once, each received straight into place.
  void direct_all_gather(const void* in, uint8_t* out, const std::vector<int64_t>& counts, DType type) {
    const size_t esize = dtype_bytes(type);
    const std::vector<int64_t> offsets = offsets_of(counts);
    uint8_t* own = out + offsets[static_cast<size_t>(rank)] * esize;
    const int64_t mine = counts[static_cast<size_t>(rank)];
    if (in != own && mine > 0) std::memmove(own, in, static_cast<size_t>(mine) * esize);
    for (int r = 0; r < size; ++r) {
      if (r == rank) continue;
      post_recv(out + offsets[static_cast<size_t>(r)] * esize, counts[static_cast<size_t>(r)], type, r);
      post_send(own, mine, type, r);
    }
    wait_all("MPI_Waitall (direct all-gather)");
  }

  // Ring all-gather (ring_all_gather): in round k, rank r passes segment r-k to
  // r+1 and receives segment r-k-1 from r-1, straight into place.
  void ring_all_gather(const void* in, uint8_t* out, const std::vector<int64_t>& counts, DType type) {
    const size_t esize = dtype_bytes(type);
    const std::vector<int64_t> offsets = offsets_of(counts);
    const auto seg = [&](int k) { return static_cast<size_t>(((k % size) + size) % size); };
    uint8_t* own = out + offsets[seg(rank)] * esize;
    if (in != own && counts[seg(rank)] > 0) std::memmove(own, in, static_cast<size_t>(counts[seg(rank)]) * esize);
    for (int k = 0; k + 1 < size; ++k) {
      const size_t to = seg(rank - k), from = seg(rank - k - 1);
      ring_round(out + offsets[to] * esize, counts[to], out + offsets[from] * esize, counts[from], type,
                 "MPI_Waitall (ring all-gather)");
    }
  }

  // A reduce-scatter into this rank's own segment, then an all-gather in place:
  // ring or direct (parallel.all_reduce), the same sums either way.
  void all_reduce(void* data, int64_t count, DType type, sim::AllReduceAlgorithm algorithm) {
    const std::vector<int64_t> counts = even_counts(count, size);
    const std::vector<int64_t> offsets = offsets_of(counts);
    auto* bytes = static_cast<uint8_t*>(data);
    uint8_t* mine = bytes + offsets[static_cast<size_t>(rank)] * dtype_bytes(type);
    if (algorithm == sim::AllReduceAlgorithm::direct && size > 1) {
      direct_reduce_scatter(bytes, mine, counts, type);
      direct_all_gather(mine, bytes, counts, type);
      return;
    }
    ring_reduce_scatter(bytes, mine, counts, type);
    ring_all_gather(mine, bytes, counts, type);
  }

  // Direct sends from the root to every other rank, all at once: the recorded
  // graph's broadcast (comm/recording.cpp), not MPI_Bcast's tree.
  void broadcast(void* data, int64_t count, DType type, int root) {
    if (rank == root) {
      for (int r = 0; r < size; ++r)
        if (r != root) post_send(data, count, type, r);
    } else {
      post_recv(data, count, type, root);
    }
    wait_all("MPI_Waitall (broadcast)");
  }
};

}  // namespace lowband::comm::mpi_call
