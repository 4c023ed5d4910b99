#include "comm/nccl.h"

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "comm/mpi.h"

#ifdef LOWBAND_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace lowband::comm {

int node_local_rank() {
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    throw std::runtime_error("MPI: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
  int rank = 0;
  const int rc = MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  if (rc != MPI_SUCCESS) throw std::runtime_error("MPI: MPI_Comm_rank (node communicator) failed");
  return rank;
}

#ifndef LOWBAND_HAVE_NCCL

bool nccl_compiled() { return false; }
int nccl_devices() { return 0; }

struct NcclCommunicator::Impl {};
NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NcclCommunicator::~NcclCommunicator() = default;
namespace {
[[noreturn]] void no_nccl() { throw std::logic_error("NCCL comm: built without NCCL"); }
}  // namespace
int NcclCommunicator::device() const { no_nccl(); }
int NcclCommunicator::rank() const { no_nccl(); }
int NcclCommunicator::size() const { no_nccl(); }
std::string NcclCommunicator::describe() const { no_nccl(); }
void NcclCommunicator::send(int, int, const void*, size_t, const Wire&) { no_nccl(); }
void NcclCommunicator::recv(int, int, void*, size_t, const Wire&) { no_nccl(); }
void NcclCommunicator::recv_message(int, int, std::vector<uint8_t>&, const Wire&) { no_nccl(); }
void NcclCommunicator::all_reduce_sum(void*, int64_t, DType, const Wire&) { no_nccl(); }
void NcclCommunicator::all_gather(const void*, void*, const std::vector<int64_t>&, DType, const Wire&) { no_nccl(); }
void NcclCommunicator::reduce_scatter_sum(const void*, void*, const std::vector<int64_t>&, DType, const Wire&) {
  no_nccl();
}
void NcclCommunicator::broadcast(void*, int64_t, DType, int, const Wire&) { no_nccl(); }
std::unique_ptr<Communicator> NcclCommunicator::split(int) { no_nccl(); }

std::unique_ptr<NcclCommunicator> nccl_world(int) {
  throw std::runtime_error("NCCL: this lowband was built without NCCL (it needs the CUDA toolkit's nccl.h at "
                           "configure time)");
}

#else  // LOWBAND_HAVE_NCCL

namespace {

void check_cuda(cudaError_t err, const char* call) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("NCCL comm: ") + call + " failed: " + cudaGetErrorName(err) + ": " +
                             cudaGetErrorString(err));
}

void check_nccl(ncclResult_t rc, const char* call, ncclComm_t comm = nullptr) {
  if (rc == ncclSuccess) return;
  std::string what = std::string("NCCL: ") + call + " failed: " + ncclGetErrorString(rc);
  if (const char* last = ncclGetLastError(comm); last != nullptr && *last != '\0') what += std::string(" (") + last + ")";
  throw std::runtime_error(what);
}

ncclDataType_t nccl_type(DType type) {
  switch (type) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
  }
  throw std::logic_error("NCCL comm: unknown DType");
}

// Device memory that grows to the largest request and is kept between calls.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch() { release(); }
  void release() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr, capacity_ = 0;
  }
  uint8_t* get(size_t bytes) {
    if (bytes > capacity_) {
      if (ptr_ != nullptr) check_cuda(cudaFree(ptr_), "cudaFree (staging)");
      ptr_ = nullptr, capacity_ = 0;
      check_cuda(cudaMalloc(reinterpret_cast<void**>(&ptr_), bytes), "cudaMalloc (staging)");
      capacity_ = bytes;
    }
    return ptr_;
  }

 private:
  uint8_t* ptr_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace

bool nccl_compiled() { return true; }

int nccl_devices() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    cudaGetLastError();  // clear it: later calls must not report it again
    return 0;
  }
  return devices;
}

struct NcclCommunicator::Impl {
  std::unique_ptr<Communicator> host;  // MPI: point-to-point messages and NCCL's bootstrap
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0, rank = 0, size = 1;
  DeviceScratch in_buffer, out_buffer;

  ~Impl() {
    // Errors while closing are not worth a throw from a destructor.
    int previous = 0;
    const bool switched = cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device) == cudaSuccess;
    in_buffer.release(), out_buffer.release();
    if (comm != nullptr) ncclCommDestroy(comm);
    if (stream != nullptr) cudaStreamDestroy(stream);
    if (switched) cudaSetDevice(previous);
  }
  // Makes this rank's device current for one call and restores the caller's:
  // the kernels' per-thread context (kernels/cuda/context.cuh) assumes nobody else
  // changes the thread's device behind it.
  class OnDevice {
   public:
    explicit OnDevice(int device) {
      check_cuda(cudaGetDevice(&previous_), "cudaGetDevice");
      if (previous_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
    }
    ~OnDevice() { cudaSetDevice(previous_); }
    OnDevice(const OnDevice&) = delete;
    OnDevice& operator=(const OnDevice&) = delete;

   private:
    int previous_ = 0;
  };
  void upload(void* dst, const void* src, size_t bytes) const {
    if (bytes > 0) check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync (upload)");
  }
  void download(void* dst, const void* src, size_t bytes) const {
    if (bytes > 0)
      check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (download)");
  }
  void wait() const { check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }

  // out (counts[rank] elements, host) <- the canonical sum of segment `rank` of
  // every rank's in (sum(counts) elements, host).
  void reduce_scatter(const void* in, void* out, const std::vector<int64_t>& counts, DType type) {
    if (type == DType::u8) throw std::logic_error("NCCL comm: no sum of u8");
    const OnDevice on(device);
    const size_t esize = dtype_bytes(type);
    const std::vector<int64_t> offsets = offsets_of(counts);
    const int64_t mine = counts[static_cast<size_t>(rank)];
    uint8_t* d_in = in_buffer.get(static_cast<size_t>(offsets.back()) * esize);
    uint8_t* d_parts = out_buffer.get(static_cast<size_t>(size * mine) * esize);
    upload(d_in, in, static_cast<size_t>(offsets.back()) * esize);
    // Segment r of every rank to rank r: slot s of d_parts holds rank s's.
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size; ++r) {
      const size_t ru = static_cast<size_t>(r);
      if (counts[ru] > 0)
        check_nccl(ncclSend(d_in + offsets[ru] * esize, static_cast<size_t>(counts[ru]), nccl_type(type), r, comm,
                            stream),
                   "ncclSend (reduce-scatter)", comm);
      if (mine > 0)
        check_nccl(ncclRecv(d_parts + r * mine * esize, static_cast<size_t>(mine), nccl_type(type), r, comm, stream),
                   "ncclRecv (reduce-scatter)", comm);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd (reduce-scatter)", comm);
    std::vector<uint8_t> parts(static_cast<size_t>(size * mine) * esize);
    download(parts.data(), d_parts, parts.size());
    wait();
    std::vector<const void*> slots;  // rank r's part is slot r; added in the canonical (ring) order
    for (int r : ring_sum_order(rank, size)) slots.push_back(parts.data() + r * mine * esize);
    sum_in_order(slots, out, mine, type);
  }

  // out (sum(counts) elements, host) <- every rank's in (counts[r] elements), in
  // rank order. ncclAllGather moves equal blocks, so each block is padded to the largest count.
  void all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type) {
    const OnDevice on(device);
    const size_t esize = dtype_bytes(type);
    const int64_t block = *std::max_element(counts.begin(), counts.end());
    if (block == 0) return;
    const size_t block_bytes = static_cast<size_t>(block) * esize;
    uint8_t* d_in = in_buffer.get(block_bytes);
    uint8_t* d_out = out_buffer.get(block_bytes * static_cast<size_t>(size));
    upload(d_in, in, static_cast<size_t>(counts[static_cast<size_t>(rank)]) * esize);
    check_nccl(ncclAllGather(d_in, d_out, static_cast<size_t>(block), nccl_type(type), comm, stream), "ncclAllGather",
               comm);
    std::vector<uint8_t> blocks(block_bytes * static_cast<size_t>(size));
    download(blocks.data(), d_out, blocks.size());
    wait();
    const std::vector<int64_t> offsets = offsets_of(counts);
    for (int r = 0; r < size; ++r) {
      const size_t ru = static_cast<size_t>(r);
      std::memmove(static_cast<uint8_t*>(out) + offsets[ru] * esize, blocks.data() + ru * block_bytes,
                   static_cast<size_t>(counts[ru]) * esize);
    }
  }
};

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NcclCommunicator::~NcclCommunicator() = default;

int NcclCommunicator::device() const { return impl_->device; }
int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }

std::string NcclCommunicator::describe() const {
  cudaDeviceProp prop{};
  const std::string gpu =
      cudaGetDeviceProperties(&prop, impl_->device) == cudaSuccess ? std::string(prop.name) : std::string("?");
  int version = 0;
  ncclGetVersion(&version);
  return "NCCL " + std::to_string(version) + " rank " + std::to_string(impl_->rank) + " of " +
         std::to_string(impl_->size) + " on CUDA device " + std::to_string(impl_->device) + " (" + gpu + "); " +
         impl_->host->describe();
}

void NcclCommunicator::send(int dst, int tag, const void* data, size_t bytes, const Wire& wire) {
  impl_->host->send(dst, tag, data, bytes, wire);
}
void NcclCommunicator::recv(int src, int tag, void* data, size_t bytes, const Wire& wire) {
  impl_->host->recv(src, tag, data, bytes, wire);
}
void NcclCommunicator::recv_message(int src, int tag, std::vector<uint8_t>& out, const Wire& wire) {
  impl_->host->recv_message(src, tag, out, wire);
}

void NcclCommunicator::all_reduce_sum(void* data, int64_t count, DType type, const Wire&) {
  if (count < 0) throw std::logic_error("NCCL comm: all_reduce_sum of a negative count");
  const std::vector<int64_t> counts = even_counts(count, impl_->size);
  std::vector<uint8_t> mine(static_cast<size_t>(counts[static_cast<size_t>(impl_->rank)]) * dtype_bytes(type));
  impl_->reduce_scatter(data, mine.data(), counts, type);
  impl_->all_gather(mine.data(), data, counts, type);
}

void NcclCommunicator::reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                                          const Wire&) {
  check_counts(counts, impl_->size, "NCCL comm", "reduce_scatter_sum");
  impl_->reduce_scatter(in, out, counts, type);
}

void NcclCommunicator::all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                                  const Wire&) {
  check_counts(counts, impl_->size, "NCCL comm", "all_gather");
  impl_->all_gather(in, out, counts, type);
}

void NcclCommunicator::broadcast(void* data, int64_t count, DType type, int root, const Wire&) {
  if (count < 0) throw std::logic_error("NCCL comm: broadcast of a negative count");
  if (root < 0 || root >= impl_->size)
    throw std::logic_error("NCCL comm: broadcast root " + std::to_string(root) + " out of range 0.." +
                           std::to_string(impl_->size - 1));
  if (count == 0) return;
  const Impl::OnDevice on(impl_->device);
  const size_t bytes = static_cast<size_t>(count) * dtype_bytes(type);
  uint8_t* d = impl_->in_buffer.get(bytes);
  if (impl_->rank == root) impl_->upload(d, data, bytes);
  check_nccl(ncclBroadcast(d, d, static_cast<size_t>(count), nccl_type(type), root, impl_->comm, impl_->stream),
             "ncclBroadcast", impl_->comm);
  impl_->download(data, d, bytes);
  impl_->wait();
}

namespace {
std::unique_ptr<NcclCommunicator> make_nccl(std::unique_ptr<Communicator> host, ncclComm_t comm, int device) {
  auto impl = std::make_unique<NcclCommunicator::Impl>();
  impl->host = std::move(host);
  impl->comm = comm;
  impl->device = device;
  check_nccl(ncclCommUserRank(comm, &impl->rank), "ncclCommUserRank", comm);
  check_nccl(ncclCommCount(comm, &impl->size), "ncclCommCount", comm);
  if (impl->rank != impl->host->rank() || impl->size != impl->host->size())
    throw std::logic_error("NCCL comm: NCCL and MPI disagree on the ranks (a bug)");
  const NcclCommunicator::Impl::OnDevice on(device);
  check_cuda(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return std::make_unique<NcclCommunicator>(std::move(impl));
}
}  // namespace

std::unique_ptr<Communicator> NcclCommunicator::split(int color) {
  // Both splits are collective over this communicator: MPI's first, then NCCL's.
  std::unique_ptr<Communicator> host = impl_->host->split(color);
  const Impl::OnDevice on(impl_->device);
  ncclComm_t sub = nullptr;
  check_nccl(ncclCommSplit(impl_->comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, impl_->rank, &sub, nullptr),
             "ncclCommSplit", impl_->comm);
  if (color < 0) return nullptr;
  return make_nccl(std::move(host), sub, impl_->device);
}

std::unique_ptr<NcclCommunicator> nccl_world(int device) {
  const int devices = nccl_devices();
  if (devices == 0) throw std::runtime_error("NCCL: no CUDA device in this process");
  if (device < 0) device = node_local_rank() % devices;
  if (device >= devices)
    throw std::runtime_error("NCCL: no CUDA device " + std::to_string(device) + " (this process sees " +
                             std::to_string(devices) + ")");
  std::unique_ptr<Communicator> host = mpi_world();
  const NcclCommunicator::Impl::OnDevice on(device);
  ncclUniqueId id{};
  if (host->rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  host->broadcast(reinterpret_cast<uint8_t*>(&id), static_cast<int64_t>(sizeof id), 0, Wire("nccl_id"));
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, host->size(), id, host->rank()), "ncclCommInitRank");
  return make_nccl(std::move(host), comm, device);
}

#endif  // LOWBAND_HAVE_NCCL

}  // namespace lowband::comm
