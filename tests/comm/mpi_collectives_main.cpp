// The collective checks of test_in_process.cpp, across processes: run by ctest as
// `mpirun -np P test_comm_mpi` for a few P, and as `mpirun -np P test_comm_mpi
// --nccl` (the NCCL communicator, one GPU per process) where NCCL is built; that
// one exits 77 (ctest: skipped, saying why) when this node has fewer GPUs than
// processes on it; and as `mpirun -np 2 --mca btl tcp,self test_comm_mpi --progress`
// (bytes move while a rank computes). Prints one nccl-tests-like row per
// check (rank 0) and exits 1 when any element is wrong (#wrong > 0) or a call
// throws. The count of wrong elements is summed with MPI_Allreduce on integers,
// not with the communicator under test.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/bench.h"
#include "comm/mpi.h"
#include "comm/nccl.h"
#include "tests/comm/watchdog.h"

namespace lowband::comm {
namespace {

int64_t total_wrong = 0;

// Sums this rank's wrong count over the processes; rank 0 prints the row.
void report(Communicator& comm, const std::string& what, int64_t count, const char* type, int64_t wrong) {
  long long mine = wrong, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  total_wrong += all;
  if (comm.rank() == 0) std::printf("  %10lld  %6s  %-36s  %6lld\n", static_cast<long long>(count), type, what.c_str(), all);
}

void exact_collectives(Communicator& comm, const std::string& label, int64_t largest) {
  for (int64_t count : {0, 1, 7, 1000, 4099, 1 << 18})
    if (count <= largest)
    for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                         Collective::broadcast})
      for (DType type : {DType::f32, DType::f64, DType::i64})
        report(comm, label + to_string(c), count, to_string(type), run_checked(comm, c, count, type, 0));
  for (int root = 0; root < comm.size(); ++root)
    report(comm, label + "broadcast root " + std::to_string(root), 333, "uint8",
           run_checked(comm, Collective::broadcast, 333, DType::u8, root));
  report(comm, label + "all_gather", 1001, "uint8", run_checked(comm, Collective::all_gather, 1001, DType::u8));
}

// Floats whose sum depends on the order: the ring-order sum (communicator.h), bit
// for bit, so the in-process communicator's.
void float_sums(Communicator& comm) {
  const int p = comm.size();
  const int64_t count = 3001;
  std::vector<std::vector<float>> inputs(static_cast<size_t>(p), std::vector<float>(count));
  for (int r = 0; r < p; ++r) {  // every process makes every rank's input
    std::mt19937 rng(static_cast<unsigned>(17 + r));
    std::uniform_real_distribution<float> dist(-1e4f, 1e4f);
    for (float& x : inputs[static_cast<size_t>(r)]) x = dist(rng) * (r % 2 ? 1e-3f : 1.0f);
  }
  std::vector<const void*> pointers;
  for (const auto& in : inputs) pointers.push_back(in.data());
  std::vector<float> expected(count);
  sum_in_ring_order(pointers, expected.data(), even_counts(count, p), DType::f32);
  const size_t me = static_cast<size_t>(comm.rank());
  std::vector<float> data = inputs[me];
  comm.all_reduce_sum(data.data(), count, "test");
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) wrong += std::memcmp(&data[i], &expected[i], sizeof(float)) != 0;
  report(comm, "all_reduce bitwise ring-order sum", count, "float", wrong);

  const std::vector<int64_t> counts = even_counts(count, p);
  int64_t offset = 0;
  for (size_t r = 0; r < me; ++r) offset += counts[r];
  std::vector<float> mine(static_cast<size_t>(counts[me]));
  comm.reduce_scatter_sum(inputs[me].data(), mine.data(), counts, DType::f32, "test");
  wrong = 0;
  for (size_t i = 0; i < mine.size(); ++i)
    wrong += std::memcmp(&mine[i], &expected[static_cast<size_t>(offset) + i], sizeof(float)) != 0;
  report(comm, "reduce_scatter bitwise ring-order sum", counts[me], "float", wrong);

  // Uneven segments, one of them empty: still segment s in ring_sum_order(s, P).
  std::vector<int64_t> uneven(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) uneven[static_cast<size_t>(r)] = r == 1 ? 0 : 1 + (977 * r) % (count / p);
  std::vector<float> expected_uneven(count);
  sum_in_ring_order(pointers, expected_uneven.data(), uneven, DType::f32);
  offset = 0;
  for (size_t r = 0; r < me; ++r) offset += uneven[r];
  mine.assign(static_cast<size_t>(uneven[me]), 0.0f);
  comm.reduce_scatter_sum(inputs[me].data(), mine.data(), uneven, DType::f32, "test");
  wrong = 0;
  for (size_t i = 0; i < mine.size(); ++i)
    wrong += std::memcmp(&mine[i], &expected_uneven[static_cast<size_t>(offset) + i], sizeof(float)) != 0;
  report(comm, "reduce_scatter uneven ring-order sum", uneven[me], "float", wrong);
}

void split_and_messages(Communicator& comm) {
  const int me = comm.rank(), p = comm.size();
  // Split: even and odd ranks; the last rank (when P > 2) stays out.
  const int color = (p > 2 && me == p - 1) ? -1 : me % 2;
  auto sub = comm.split(color);
  int64_t wrong = 0;
  if (color < 0) {
    wrong += sub != nullptr;
  } else {
    int64_t expected = 0, members = 0;
    for (int r = 0; r < p; ++r)
      if (!(p > 2 && r == p - 1) && r % 2 == color) expected += r, ++members;
    wrong += sub->size() != members;
    wrong += sub->rank() != me / 2;
    int64_t sum = me;
    sub->all_reduce_sum(&sum, 1, "test");
    wrong += sum != expected;
    wrong += run_checked(*sub, Collective::all_reduce, 1001, DType::f32);
  }
  report(comm, "split by parity: sizes, ranks, sums", 1, "int64", wrong);

  // split_known: every rank's color given; the groups kept and found again,
  // two different ones in turn, each with the right members and sums.
  wrong = 0;
  std::vector<int> parity(static_cast<size_t>(p)), halves(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) parity[static_cast<size_t>(r)] = r % 2, halves[static_cast<size_t>(r)] = r < p / 2 ? 0 : -1;
  for (int round = 0; round < 3; ++round)
    for (const std::vector<int>* colors : {&parity, &halves}) {
      auto group = comm.split_known(*colors);
      const int mine = (*colors)[static_cast<size_t>(me)];
      if (mine < 0) {
        wrong += group != nullptr;
        continue;
      }
      int64_t expected = 0, members = 0, sum = me;
      for (int r = 0; r < p; ++r)
        if ((*colors)[static_cast<size_t>(r)] == mine) expected += r, ++members;
      wrong += group->size() != members;
      group->all_reduce_sum(&sum, 1, Wire("test", -1, /*defer=*/round == 1));
      group->wait_deferred();
      wrong += sum != expected;
    }
  report(comm, "split_known: groups kept and found again", 1, "int64", wrong);

  // A ring, two tags sent in one order and received in the other; then sizes
  // unknown to the receiver.
  wrong = 0;
  const int next = (me + 1) % p, prev = (me + p - 1) % p;
  for (int i = 0; i < 20; ++i) {
    const int a = 100 * me + i, b = -(100 * me + i);
    comm.send(next, 1, &a, sizeof a, "test");
    comm.send(next, 2, &b, sizeof b, "test");
  }
  for (int i = 0; i < 20; ++i) {
    int b = 0;
    comm.recv(prev, 2, &b, sizeof b, "test");
    wrong += b != -(100 * prev + i);
  }
  for (int i = 0; i < 20; ++i) {
    int a = 0;
    comm.recv(prev, 1, &a, sizeof a, "test");
    wrong += a != 100 * prev + i;
  }
  std::vector<uint8_t> payload(static_cast<size_t>(me) + 3, static_cast<uint8_t>(me)), got;
  comm.send(next, 3, payload.data(), payload.size(), "test");
  comm.recv_message(prev, 3, got, "test");
  wrong += got != std::vector<uint8_t>(static_cast<size_t>(prev) + 3, static_cast<uint8_t>(prev));
  // A recv of the wrong size is an error of use.
  const int64_t x = 5;
  comm.send(next, 4, &x, sizeof x, "test");
  int32_t small = 0;
  bool threw = false;
  try {
    comm.recv(prev, 4, &small, sizeof small, "test");
  } catch (const std::logic_error&) {
    threw = true;
  }
  wrong += !threw;
  report(comm, "send/recv order per tag, recv_message", 20, "int32", wrong);
}

// Deferred collectives return at once and run on the progress thread: rank 0
// starts a deferred all-reduce, then sends rank 1 the token rank 1 waits for
// before it joins the all-reduce. Were the all-reduce completed before
// returning, both would wait for ever (the watchdog ends the test). Between
// them, more deferred collectives and ordinary ones on the same communicator:
// each its own messages, each the right result.
void deferred_collectives(Communicator& comm) {
  const int me = comm.rank(), p = comm.size();
  report(comm, "progress thread running", 1, "-", mpi_progress_thread() ? 0 : 1);
  if (!mpi_progress_thread()) return;
  lowband::test::within_seconds(60, [&] {
    const int64_t count = 1 << 16;
    std::vector<std::vector<float>> inputs(static_cast<size_t>(p), std::vector<float>(count));
    std::vector<const void*> pointers;
    for (int r = 0; r < p; ++r) {
      std::mt19937 rng(static_cast<unsigned>(31 + r));
      std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
      for (float& x : inputs[static_cast<size_t>(r)]) x = dist(rng);
      pointers.push_back(inputs[static_cast<size_t>(r)].data());
    }
    std::vector<float> expected(count);
    sum_in_ring_order(pointers, expected.data(), even_counts(count, p), DType::f32);
    std::vector<float> first = inputs[static_cast<size_t>(me)], second = first;
    std::vector<int64_t> gathered(static_cast<size_t>(p)), gathered_deferred(static_cast<size_t>(p));
    const int64_t mine = 1000 + me;
    const Wire deferred("test", -1, /*defer=*/true);
    const int token_tag = 9;
    int token = 0;
    if (me == 1) comm.recv(0, token_tag, &token, sizeof token, "test");
    comm.all_reduce_sum(first.data(), count, DType::f32, me == 1 ? Wire("test") : deferred);
    if (me == 0) {
      token = 42;
      comm.send(1, token_tag, &token, sizeof token, "test");
    }
    comm.all_gather(&mine, gathered_deferred.data(), std::vector<int64_t>(static_cast<size_t>(p), 1), DType::i64,
                    deferred);
    comm.all_reduce_sum(second.data(), count, DType::f32, deferred);
    comm.all_gather(&mine, gathered.data(), std::vector<int64_t>(static_cast<size_t>(p), 1), DType::i64, "test");
    comm.wait_deferred();
    int64_t wrong = me == 1 ? token != 42 : 0;
    for (int64_t i = 0; i < count; ++i) {
      wrong += std::memcmp(&first[i], &expected[i], sizeof(float)) != 0;
      wrong += std::memcmp(&second[i], &expected[i], sizeof(float)) != 0;
    }
    for (int r = 0; r < p; ++r)
      wrong += (gathered[static_cast<size_t>(r)] != 1000 + r) + (gathered_deferred[static_cast<size_t>(r)] != 1000 + r);
    report(comm, "deferred beside ordinary collectives", count, "float", wrong);
  });
}

// Bytes move while a rank computes: rank 0 sends 8 MiB (over TCP a rendezvous:
// rank 0's MPI must answer rank 1's clear-to-send) and then waits without
// calling MPI for rank 1 to say, through a file, that it has the message.
// Without the progress thread rank 1 never gets it while rank 0 waits; after
// 10 s rank 0 says so and calls MPI, which lets the message through.
void progress_while_computing(Communicator& comm) {
  const int me = comm.rank();
  char dir[64] = "/tmp/lowband-progress-XXXXXX";
  if (me == 0 && !mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  const std::string flag = std::string(dir) + "/received";
  std::vector<uint8_t> message(size_t{8} << 20);
  for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<uint8_t>(i * 7);
  int64_t wrong = 0;
  if (me == 0) {
    comm.send(1, 5, message.data(), message.size(), "test");
    const auto start = std::chrono::steady_clock::now();
    bool received = false;
    while (!(received = std::filesystem::exists(flag)) && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!received) {
      std::printf("no progress while rank 0 computed: rank 1 did not get 8 MiB in 10 s\n");
      wrong = 1;
    }
  } else if (me == 1) {
    std::vector<uint8_t> got(message.size());
    comm.recv(0, 5, got.data(), got.size(), "test");
    wrong += got != message;
    std::FILE* f = std::fopen(flag.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + flag);
    std::fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) std::filesystem::remove_all(dir);
  report(comm, "8 MiB received while the sender computes", int64_t(message.size()), "uint8", wrong);
}

}  // namespace
}  // namespace lowband::comm

// How many of mpirun's processes share this node.
int node_processes() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int size = 0;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

int main(int argc, char** argv) {
  using namespace lowband::comm;
  const bool nccl = argc > 1 && std::string(argv[1]) == "--nccl";
  const bool progress = argc > 1 && std::string(argv[1]) == "--progress";
  try {
    MpiSession session(&argc, &argv);
    const int node_ranks = node_processes();  // collective: every process calls it once
    if (nccl && (!nccl_compiled() || nccl_devices() < node_ranks)) {
      int world_rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
      if (world_rank == 0)
        std::printf("SKIPPED: the NCCL checks need a GPU per process: %d processes on this node, %d GPUs%s\n",
                    node_ranks, nccl_devices(), nccl_compiled() ? "" : " (built without NCCL)");
      return 77;
    }
    {
      std::unique_ptr<Communicator> world;
      if (nccl) world = nccl_world(); else world = mpi_world();
      if (world->rank() == 0) {
        std::printf("# %s, %d processes\n", world->describe().c_str(), world->size());
        std::printf("# %10s  %6s  %-36s  %6s\n", "count", "type", "check", "#wrong");
      }
      if (progress) {
        progress_while_computing(*world);
        if (world->rank() == 0) std::printf("# #wrong in all: %lld\n", static_cast<long long>(total_wrong));
        return total_wrong == 0 ? 0 : 1;
      }
      exact_collectives(*world, "", 1 << 18);
      float_sums(*world);
      split_and_messages(*world);
      if (!nccl) {
        // The same through the several-calls path: at most 37 elements per MPI call.
        auto chunked = mpi_world(37);
        exact_collectives(*chunked, "37/call ", 4099);
        float_sums(*chunked);  // messages cut in pieces: the same sums
        // parallel.all_reduce direct: two all-to-alls instead of the ring, the
        // same bits (float_sums compares with the ring-order sum); splits inherit it.
        for (const int64_t per_call : {int64_t{0}, int64_t{37}}) {
          auto direct = mpi_world(per_call, lowband::sim::AllReduceAlgorithm::direct);
          exact_collectives(*direct, per_call ? "direct 37/call " : "direct ", per_call ? 4099 : 1 << 18);
          float_sums(*direct);
          split_and_messages(*direct);
        }
        deferred_collectives(*world);
      }
      if (world->rank() == 0) std::printf("# #wrong in all: %lld\n", static_cast<long long>(total_wrong));
    }
    return total_wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_collectives: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
