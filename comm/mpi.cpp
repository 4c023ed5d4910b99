#include "comm/mpi.h"

// The C API only (MPI::MPI_C): no C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>

namespace lowband::comm {

namespace {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) length = std::snprintf(text, sizeof text, "error %d", rc);
  throw std::runtime_error(std::string("MPI: ") + call + " failed: " + std::string(text, static_cast<size_t>(length)));
}

MPI_Datatype mpi_type(DType type) {
  switch (type) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i64: return MPI_INT64_T;
    case DType::u8: return MPI_UINT8_T;
  }
  throw std::logic_error("MPI comm: unknown DType");
}

std::vector<int64_t> offsets_of(const std::vector<int64_t>& counts) {
  std::vector<int64_t> offsets(counts.size() + 1, 0);
  for (size_t r = 0; r < counts.size(); ++r) offsets[r + 1] = offsets[r] + counts[r];
  return offsets;
}

// One round of a call split into rounds: from each segment, the elements from
// `at` on, at most `per` of them (0 once a segment is done).
std::vector<int64_t> round_counts(const std::vector<int64_t>& counts, int64_t at, int64_t per) {
  std::vector<int64_t> round(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) round[r] = std::clamp<int64_t>(counts[r] - at, 0, per);
  return round;
}

std::vector<int> ints(const std::vector<int64_t>& values) {
  std::vector<int> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > INT_MAX) throw std::logic_error("MPI comm: an int count overflowed (a bug in the chunking)");
    out[i] = static_cast<int>(values[i]);
  }
  return out;
}

}  // namespace

struct MpiCommunicator::Impl {
  struct Send {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<uint8_t> payload;
  };
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  int tag_ub = 32767;
  int64_t max_elements = INT_MAX;
  std::deque<Send> sends;  // in flight, oldest first
  std::vector<uint8_t> scratch;

  // Completes the sends that are done, without waiting.
  void progress() {
    for (auto it = sends.begin(); it != sends.end();) {
      int done = 0;
      check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test (a send)");
      it = done ? sends.erase(it) : std::next(it);
    }
  }
  void check_peer(int peer, int tag, const char* call) const {
    if (peer < 0 || peer >= size)
      throw std::logic_error(std::string("MPI comm: ") + call + " peer " + std::to_string(peer) +
                             " out of range 0.." + std::to_string(size - 1));
    if (tag < 0 || tag > tag_ub)
      throw std::logic_error(std::string("MPI comm: ") + call + " tag " + std::to_string(tag) + " out of range 0.." +
                             std::to_string(tag_ub));
  }
  void check_counts(const std::vector<int64_t>& counts, const char* call) const {
    if (static_cast<int>(counts.size()) != size)
      throw std::logic_error(std::string("MPI comm: ") + call + " needs " + std::to_string(size) + " counts, got " +
                             std::to_string(counts.size()));
    for (int64_t c : counts)
      if (c < 0) throw std::logic_error(std::string("MPI comm: ") + call + " of a negative count");
  }

  // Reduce-scatter of one piece: rank r gets, in out, the rank-order sum of
  // in[offsets[r] .. + counts[r]) over the ranks. Every count and offset here fits an int.
  void reduce_scatter_piece(const uint8_t* in, void* out, const std::vector<int64_t>& counts, DType type) {
    const size_t esize = dtype_bytes(type);
    const int64_t mine = counts[static_cast<size_t>(rank)];
    std::vector<int64_t> recv_counts(static_cast<size_t>(size), mine), recv_offsets(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) recv_offsets[static_cast<size_t>(r)] = r * mine;
    scratch.resize(static_cast<size_t>(size * mine) * esize);
    const std::vector<int> sc = ints(counts), sd = ints(offsets_of(counts)), rc = ints(recv_counts),
                           rd = ints(recv_offsets);
    check(MPI_Alltoallv(in, sc.data(), sd.data(), mpi_type(type), scratch.data(), rc.data(), rd.data(),
                        mpi_type(type), comm),
          "MPI_Alltoallv (reduce-scatter)");
    std::vector<const void*> parts(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) parts[static_cast<size_t>(r)] = scratch.data() + r * mine * esize;
    sum_in_rank_order(parts, out, mine, type);
  }
};

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (provided < MPI_THREAD_SERIALIZED)
    throw std::runtime_error("MPI: MPI_Init_thread gave thread level " + std::to_string(provided) +
                             ", lowband needs MPI_THREAD_SERIALIZED");
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  check(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(impl_->comm, &impl_->rank), "MPI_Comm_rank");
  check(MPI_Comm_size(impl_->comm, &impl_->size), "MPI_Comm_size");
  void* tag_ub = nullptr;
  int found = 0;
  check(MPI_Comm_get_attr(impl_->comm, MPI_TAG_UB, &tag_ub, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
  if (found) impl_->tag_ub = *static_cast<int*>(tag_ub);
}

MpiCommunicator::~MpiCommunicator() {
  try {
    flush();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lowband: %s (while closing an MPI communicator)\n", e.what());
  }
  MPI_Comm_free(&impl_->comm);
}

void MpiCommunicator::flush() {
  for (auto& s : impl_->sends) check(MPI_Wait(&s.request, MPI_STATUS_IGNORE), "MPI_Wait (a send)");
  impl_->sends.clear();
}

int MpiCommunicator::rank() const { return impl_->rank; }
int MpiCommunicator::size() const { return impl_->size; }

std::string MpiCommunicator::describe() const {
  char host[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  if (MPI_Get_processor_name(host, &length) != MPI_SUCCESS) length = 0;
  return "MPI rank " + std::to_string(impl_->rank) + " of " + std::to_string(impl_->size) + " on " +
         std::string(host, static_cast<size_t>(length));
}

void MpiCommunicator::send(int dst, int tag, const void* data, size_t bytes, const Wire&) {
  impl_->check_peer(dst, tag, "send");
  if (bytes > static_cast<size_t>(INT_MAX))
    throw std::logic_error("MPI comm: send of " + std::to_string(bytes) + " bytes: at most 2 GiB per message");
  impl_->progress();
  Impl::Send& s = impl_->sends.emplace_back();
  s.payload.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
  check(MPI_Isend(s.payload.data(), static_cast<int>(bytes), MPI_BYTE, dst, tag, impl_->comm, &s.request),
        "MPI_Isend");
}

void MpiCommunicator::recv(int src, int tag, void* data, size_t bytes, const Wire&) {
  impl_->check_peer(src, tag, "recv");
  impl_->progress();
  MPI_Message message;
  MPI_Status status;
  check(MPI_Mprobe(src, tag, impl_->comm, &message, &status), "MPI_Mprobe");
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  if (static_cast<size_t>(count) != bytes) {
    std::vector<uint8_t> discard(static_cast<size_t>(count));
    check(MPI_Mrecv(discard.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
    throw std::logic_error("MPI comm: rank " + std::to_string(impl_->rank) + " recv(src " + std::to_string(src) +
                           ", tag " + std::to_string(tag) + ") of " + std::to_string(bytes) + " bytes got a " +
                           std::to_string(count) + "-byte message");
  }
  check(MPI_Mrecv(data, count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
}

void MpiCommunicator::recv_message(int src, int tag, std::vector<uint8_t>& out, const Wire&) {
  impl_->check_peer(src, tag, "recv_message");
  impl_->progress();
  MPI_Message message;
  MPI_Status status;
  check(MPI_Mprobe(src, tag, impl_->comm, &message, &status), "MPI_Mprobe");
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  out.resize(static_cast<size_t>(count));
  check(MPI_Mrecv(out.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
}

void MpiCommunicator::all_reduce_sum(void* data, int64_t count, DType type, const Wire&) {
  if (count < 0) throw std::logic_error("MPI comm: all_reduce_sum of a negative count");
  if (type == DType::u8) throw std::logic_error("MPI comm: no all_reduce_sum of u8");
  impl_->progress();
  const size_t esize = dtype_bytes(type);
  auto* bytes = static_cast<uint8_t*>(data);
  // Pieces of at most max_elements, each a reduce-scatter then an all-gather in place.
  int64_t begin = 0;
  do {
    const int64_t n = std::min(impl_->max_elements, count - begin);
    const std::vector<int64_t> counts = even_counts(n, impl_->size);
    const std::vector<int64_t> offsets = offsets_of(counts);
    uint8_t* piece = bytes + begin * esize;
    // The sum lands in this rank's own segment: the Alltoallv has already sent it.
    impl_->reduce_scatter_piece(piece, piece + offsets[static_cast<size_t>(impl_->rank)] * esize, counts, type);
    const std::vector<int> rc = ints(counts), rd = ints(std::vector<int64_t>(offsets.begin(), offsets.end() - 1));
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, mpi_type(type), piece, rc.data(), rd.data(), mpi_type(type), impl_->comm),
          "MPI_Allgatherv (all-reduce)");
    begin += n;
  } while (begin < count);
}

void MpiCommunicator::reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                                         const Wire&) {
  impl_->check_counts(counts, "reduce_scatter_sum");
  if (type == DType::u8) throw std::logic_error("MPI comm: no reduce_scatter_sum of u8");
  impl_->progress();
  const size_t esize = dtype_bytes(type);
  const std::vector<int64_t> offsets = offsets_of(counts);
  if (offsets.back() <= impl_->max_elements)
    return impl_->reduce_scatter_piece(static_cast<const uint8_t*>(in), out, counts, type);
  // Rounds of at most max_elements / size elements from each segment, packed.
  const int64_t per_segment = std::max<int64_t>(1, impl_->max_elements / impl_->size);
  const int64_t longest = *std::max_element(counts.begin(), counts.end());
  std::vector<uint8_t> packed;
  for (int64_t at = 0; at < longest; at += per_segment) {
    const std::vector<int64_t> round = round_counts(counts, at, per_segment);
    const std::vector<int64_t> round_offsets = offsets_of(round);
    packed.resize(static_cast<size_t>(round_offsets.back()) * esize);
    for (size_t r = 0; r < counts.size(); ++r)
      if (round[r] > 0)
        std::memcpy(packed.data() + round_offsets[r] * esize,
                    static_cast<const uint8_t*>(in) + (offsets[r] + at) * esize, static_cast<size_t>(round[r]) * esize);
    // Round by round into out, which may overlap in: sum into a piece of our own first.
    std::vector<uint8_t> piece(static_cast<size_t>(round[static_cast<size_t>(impl_->rank)]) * esize);
    impl_->reduce_scatter_piece(packed.data(), piece.data(), round, type);
    if (!piece.empty()) std::memcpy(static_cast<uint8_t*>(out) + at * esize, piece.data(), piece.size());
  }
}

void MpiCommunicator::all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                                 const Wire&) {
  impl_->check_counts(counts, "all_gather");
  impl_->progress();
  const size_t esize = dtype_bytes(type);
  const std::vector<int64_t> offsets = offsets_of(counts);
  const size_t me = static_cast<size_t>(impl_->rank);
  auto* out_bytes = static_cast<uint8_t*>(out);
  if (offsets.back() <= impl_->max_elements) {
    const std::vector<int> rc = ints(counts), rd = ints(std::vector<int64_t>(offsets.begin(), offsets.end() - 1));
    const bool in_place = in == out_bytes + offsets[me] * esize;
    check(MPI_Allgatherv(in_place ? MPI_IN_PLACE : in, rc[me], mpi_type(type), out, rc.data(), rd.data(),
                         mpi_type(type), impl_->comm),
          "MPI_Allgatherv");
    return;
  }
  // Rounds of at most max_elements / size elements from each rank, then copied into place.
  const int64_t per_rank = std::max<int64_t>(1, impl_->max_elements / impl_->size);
  const int64_t longest = *std::max_element(counts.begin(), counts.end());
  std::vector<uint8_t> gathered;
  for (int64_t at = 0; at < longest; at += per_rank) {
    const std::vector<int64_t> round = round_counts(counts, at, per_rank);
    const std::vector<int64_t> round_offsets = offsets_of(round);
    gathered.resize(static_cast<size_t>(round_offsets.back()) * esize);
    const std::vector<int> rc = ints(round),
                           rd = ints(std::vector<int64_t>(round_offsets.begin(), round_offsets.end() - 1));
    check(MPI_Allgatherv(static_cast<const uint8_t*>(in) + at * esize, rc[me], mpi_type(type), gathered.data(),
                         rc.data(), rd.data(), mpi_type(type), impl_->comm),
          "MPI_Allgatherv");
    for (size_t r = 0; r < counts.size(); ++r)
      if (round[r] > 0)
        std::memcpy(out_bytes + (offsets[r] + at) * esize, gathered.data() + round_offsets[r] * esize,
                    static_cast<size_t>(round[r]) * esize);
  }
}

void MpiCommunicator::broadcast(void* data, int64_t count, DType type, int root, const Wire&) {
  if (count < 0) throw std::logic_error("MPI comm: broadcast of a negative count");
  if (root < 0 || root >= impl_->size)
    throw std::logic_error("MPI comm: broadcast root " + std::to_string(root) + " out of range 0.." +
                           std::to_string(impl_->size - 1));
  impl_->progress();
  const size_t esize = dtype_bytes(type);
  for (int64_t begin = 0; begin < count; begin += impl_->max_elements) {
    const int n = static_cast<int>(std::min(impl_->max_elements, count - begin));
    check(MPI_Bcast(static_cast<uint8_t*>(data) + begin * esize, n, mpi_type(type), root, impl_->comm), "MPI_Bcast");
  }
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color) {
  impl_->progress();
  auto impl = std::make_unique<Impl>();
  impl->max_elements = impl_->max_elements;
  check(MPI_Comm_split(impl_->comm, color < 0 ? MPI_UNDEFINED : color, impl_->rank, &impl->comm), "MPI_Comm_split");
  if (impl->comm == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(std::move(impl));
}

std::unique_ptr<MpiCommunicator> mpi_world(int64_t max_elements_per_call) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) throw std::logic_error("MPI comm: mpi_world() needs an MpiSession");
  auto impl = std::make_unique<MpiCommunicator::Impl>();
  if (max_elements_per_call > 0) impl->max_elements = std::min<int64_t>(max_elements_per_call, INT_MAX);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &impl->comm), "MPI_Comm_dup");
  return std::make_unique<MpiCommunicator>(std::move(impl));
}

void abort_job(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; if it did, do not linger either
}

}  // namespace lowband::comm
