#include "comm/mpi.h"

#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "comm/mpi_call.h"  // <mpi.h>, the collectives' rings

namespace lowband::comm {

using mpi_call::Call;
using mpi_call::check;
using mpi_call::kProgressInterval;

namespace {

// The process's progress: a thread that calls into MPI every kProgressInterval,
// so sends and arriving messages move while the rank computes, and a thread per
// deferred collective (Wire::deferred, a gradient bucket), which runs while the
// rank goes on and beside the other deferred ones, as the step graph lets them
// (one after another, a ring's rounds would add up their latencies: 6 buckets
// of 6 rounds at 1 Gbit/s, 10 ms links took 0.6 s more per step on the testbed).
// Never a wait that calling them in order would not have had, so no new deadlock.
class Progress {
 public:
  Progress() {
    check(MPI_Comm_dup(MPI_COMM_SELF, &idle_comm_), "MPI_Comm_dup (the progress thread's)");
    thread_ = std::thread([this] { loop(); });
  }
  ~Progress() {
    try {
      wait();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lowband: %s (a deferred collective, at MPI's end)\n", e.what());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    stopped_.notify_all();
    thread_.join();
    MPI_Comm_free(&idle_comm_);
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Called by the rank's own thread only, as wait().
  void defer(std::function<void()> op) {
    deferred_.emplace_back([this, op = std::move(op)] {
      try {
        op();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    });
  }
  void wait() {
    for (std::thread& t : deferred_) t.join();
    deferred_.clear();
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      lock.unlock();
      int flag = 0;  // nothing is ever sent here: the call only drives MPI's progress engine
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, idle_comm_, &flag, MPI_STATUS_IGNORE);
      lock.lock();
      stopped_.wait_for(lock, kProgressInterval, [this] { return stop_; });
    }
  }

  std::mutex mutex_;
  std::condition_variable stopped_;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> deferred_;
  MPI_Comm idle_comm_ = MPI_COMM_NULL;
  std::thread thread_;
};

Progress* process_progress = nullptr;  // MpiSession's, when MPI gave MPI_THREAD_MULTIPLE

}  // namespace

struct MpiCommunicator::Impl {
  struct Send {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<uint8_t> payload;
  };
  // The MPI communicators, shared by every MpiCommunicator of one kept group
  // (split_known) and freed with the last.
  struct Comms {
    MPI_Comm comm = MPI_COMM_NULL;  // send/recv
    // The collectives' point-to-point messages (a duplicate of comm): they never
    // match a send/recv of the caller's, whatever its tags.
    MPI_Comm coll = MPI_COMM_NULL;
    int64_t collectives = 0;  // started on this group: the next one's tag
    Comms() = default;
    Comms(const Comms&) = delete;
    Comms& operator=(const Comms&) = delete;
    ~Comms() {
      if (coll != MPI_COMM_NULL) MPI_Comm_free(&coll);
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
  };
  std::shared_ptr<Comms> comms = std::make_shared<Comms>();
  // split_known's groups by every rank's color (nullptr: this rank is in none).
  std::map<std::vector<int>, std::shared_ptr<Comms>> kept;
  int rank = 0, size = 1;
  int tag_ub = 32767;
  int64_t max_elements = INT_MAX;
  std::deque<Send> sends;  // in flight, oldest first
  sim::AllReduceAlgorithm all_reduce = sim::AllReduceAlgorithm::ring;

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
  // Runs `body` on a Call of its own: on the progress thread when the Wire says
  // deferred (and there is one), else here, before returning.
  void collective(const Wire& wire, std::function<void(Call&)> body) {
    progress();
    Call call;
    call.comm = comms->coll;
    call.rank = rank;
    call.size = size;
    call.max_elements = max_elements;
    call.tag = static_cast<int>(comms->collectives++ % (int64_t{tag_ub} + 1));
    if (wire.deferred && process_progress) {
      call.poll = true;
      process_progress->defer([call = std::move(call), body = std::move(body)]() mutable { body(call); });
      return;
    }
    body(call);
  }
};

MpiSession::MpiSession(int* argc, char*** argv) {
  // MPI_THREAD_MULTIPLE: the progress thread calls MPI beside the rank's own
  // thread. LOWBAND_MPI_PROGRESS=0 asks for one thread at a time and no progress
  // thread (every call completes before it returns, as before it existed).
  const char* env = std::getenv("LOWBAND_MPI_PROGRESS");
  const bool want_thread = !(env && std::string(env) == "0");
  int provided = 0;
  check(MPI_Init_thread(argc, argv, want_thread ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED, &provided),
        "MPI_Init_thread");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (provided < MPI_THREAD_SERIALIZED)
    throw std::runtime_error("MPI: MPI_Init_thread gave thread level " + std::to_string(provided) +
                             ", lowband needs MPI_THREAD_SERIALIZED");
  if (want_thread && provided < MPI_THREAD_MULTIPLE)
    std::fprintf(stderr,
                 "lowband: MPI gave thread level %d, not MPI_THREAD_MULTIPLE: no progress thread, so "
                 "communication moves only while a rank calls MPI\n",
                 provided);
  if (want_thread && provided == MPI_THREAD_MULTIPLE) process_progress = new Progress();
}

MpiSession::~MpiSession() {
  delete std::exchange(process_progress, nullptr);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool mpi_progress_thread() { return process_progress != nullptr; }

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  Impl::Comms& comms = *impl_->comms;
  check(MPI_Comm_set_errhandler(comms.comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(comms.comm, &impl_->rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comms.comm, &impl_->size), "MPI_Comm_size");
  if (comms.coll == MPI_COMM_NULL)
    check(MPI_Comm_dup(comms.comm, &comms.coll), "MPI_Comm_dup (the collectives' messages)");
  void* tag_ub = nullptr;
  int found = 0;
  check(MPI_Comm_get_attr(comms.comm, MPI_TAG_UB, &tag_ub, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
  if (found) impl_->tag_ub = *static_cast<int*>(tag_ub);
}

MpiCommunicator::~MpiCommunicator() {
  try {
    // Deferred collectives use this communicator's coll: wait for them, unless an
    // exception is on its way to abort_job (a peer may never join them: a hang).
    if (std::uncaught_exceptions() == 0) wait_deferred();
    flush();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lowband: %s (while closing an MPI communicator)\n", e.what());
  }
}

void MpiCommunicator::wait_deferred() {
  if (process_progress) process_progress->wait();
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
  check(MPI_Isend(s.payload.data(), static_cast<int>(bytes), MPI_BYTE, dst, tag, impl_->comms->comm, &s.request),
        "MPI_Isend");
}

void MpiCommunicator::recv(int src, int tag, void* data, size_t bytes, const Wire&) {
  impl_->check_peer(src, tag, "recv");
  impl_->progress();
  MPI_Message message;
  MPI_Status status;
  check(MPI_Mprobe(src, tag, impl_->comms->comm, &message, &status), "MPI_Mprobe");
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
  check(MPI_Mprobe(src, tag, impl_->comms->comm, &message, &status), "MPI_Mprobe");
  int count = 0;
  check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  out.resize(static_cast<size_t>(count));
  check(MPI_Mrecv(out.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
}

void MpiCommunicator::all_reduce_sum(void* data, int64_t count, DType type, const Wire& wire) {
  if (count < 0) throw std::logic_error("MPI comm: all_reduce_sum of a negative count");
  if (type == DType::u8) throw std::logic_error("MPI comm: no all_reduce_sum of u8");
  impl_->collective(wire, [data, count, type, algorithm = impl_->all_reduce](Call& c) {
    c.all_reduce(data, count, type, algorithm);
  });
}

void MpiCommunicator::reduce_scatter_sum(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                                         const Wire& wire) {
  check_counts(counts, impl_->size, "MPI comm", "reduce_scatter_sum");
  if (type == DType::u8) throw std::logic_error("MPI comm: no reduce_scatter_sum of u8");
  impl_->collective(wire, [in, out, counts, type](Call& c) {
    c.ring_reduce_scatter(static_cast<const uint8_t*>(in), out, counts, type);
  });
}

void MpiCommunicator::all_gather(const void* in, void* out, const std::vector<int64_t>& counts, DType type,
                                 const Wire& wire) {
  check_counts(counts, impl_->size, "MPI comm", "all_gather");
  impl_->collective(wire, [in, out, counts, type](Call& c) {
    c.ring_all_gather(in, static_cast<uint8_t*>(out), counts, type);
  });
}

void MpiCommunicator::broadcast(void* data, int64_t count, DType type, int root, const Wire& wire) {
  if (count < 0) throw std::logic_error("MPI comm: broadcast of a negative count");
  if (root < 0 || root >= impl_->size)
    throw std::logic_error("MPI comm: broadcast root " + std::to_string(root) + " out of range 0.." +
                           std::to_string(impl_->size - 1));
  impl_->collective(wire, [data, count, type, root](Call& c) { c.broadcast(data, count, type, root); });
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color) {
  impl_->progress();
  auto impl = std::make_unique<Impl>();
  impl->max_elements = impl_->max_elements;
  impl->all_reduce = impl_->all_reduce;
  check(MPI_Comm_split(impl_->comms->comm, color < 0 ? MPI_UNDEFINED : color, impl_->rank, &impl->comms->comm),
        "MPI_Comm_split");
  if (impl->comms->comm == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(std::move(impl));
}

// Every rank knows every color, so every rank finds the group kept, or not, alike:
// MPI_Comm_split (and the duplicate for the collectives) only the first time.
std::unique_ptr<Communicator> MpiCommunicator::split_known(const std::vector<int>& colors) {
  if (colors.size() != static_cast<size_t>(impl_->size))
    throw std::logic_error("MPI comm: split_known of " + std::to_string(colors.size()) + " colors for " +
                           std::to_string(impl_->size) + " ranks");
  auto found = impl_->kept.find(colors);
  if (found == impl_->kept.end()) {
    std::unique_ptr<Communicator> made = split(colors[static_cast<size_t>(impl_->rank)]);
    auto* mpi = static_cast<MpiCommunicator*>(made.get());
    found = impl_->kept.emplace(colors, mpi ? mpi->impl_->comms : nullptr).first;
    return made;
  }
  if (!found->second) return nullptr;
  impl_->progress();
  auto impl = std::make_unique<Impl>();
  impl->max_elements = impl_->max_elements;
  impl->all_reduce = impl_->all_reduce;
  impl->comms = found->second;
  return std::make_unique<MpiCommunicator>(std::move(impl));
}

std::unique_ptr<MpiCommunicator> mpi_world(int64_t max_elements_per_call, sim::AllReduceAlgorithm all_reduce) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) throw std::logic_error("MPI comm: mpi_world() needs an MpiSession");
  auto impl = std::make_unique<MpiCommunicator::Impl>();
  if (max_elements_per_call > 0) impl->max_elements = std::min<int64_t>(max_elements_per_call, INT_MAX);
  impl->all_reduce = all_reduce;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &impl->comms->comm), "MPI_Comm_dup");
  return std::make_unique<MpiCommunicator>(std::move(impl));
}

void abort_job(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; if it did, do not linger either
}

}  // namespace lowband::comm
