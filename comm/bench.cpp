#include "comm/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace lowband::comm {

const char* to_string(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::broadcast: return "broadcast";
  }
  return "?";
}

const char* to_string(DType type) {
  switch (type) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i64: return "int64";
    case DType::u8: return "uint8";
  }
  return "?";
}

double bus_bandwidth_factor(Collective collective, int ranks) {
  const double n = ranks;
  switch (collective) {
    case Collective::all_reduce: return 2 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter: return (n - 1) / n;
    case Collective::broadcast: return 1;
  }
  return 0;
}

namespace {

// Rank r's element i: a small integer, so any sum over <= 4096 ranks is exact in
// f32 (< 2^24). u8 wraps, which gathers and broadcasts do not mind.
template <class T> T value(int rank, int64_t i) { return static_cast<T>((i * 7 + rank * 31) % 251 + rank); }

template <class T> struct Buffers {
  std::vector<T> in, out, expected;
};

template <class T> int64_t run_checked_typed(Communicator& comm, Collective collective, int64_t count, int root) {
  const int p = comm.size(), me = comm.rank();
  const std::vector<int64_t> counts = even_counts(count, p);
  const std::vector<int64_t> offsets = offsets_of(counts);
  const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(me)]);
  const int64_t my_offset = offsets[static_cast<size_t>(me)];
  const DType type = dtype_of<T>();
  std::vector<T> data, out, expected;
  switch (collective) {
    case Collective::all_reduce:
    case Collective::reduce_scatter: {
      data.resize(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) data[static_cast<size_t>(i)] = value<T>(me, i);
      const int64_t first = collective == Collective::all_reduce ? 0 : my_offset;
      const int64_t n = collective == Collective::all_reduce ? count : static_cast<int64_t>(mine);
      expected.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        T sum = 0;
        for (int r = 0; r < p; ++r) sum += value<T>(r, first + i);
        expected[static_cast<size_t>(i)] = sum;
      }
      if (collective == Collective::all_reduce) {
        comm.all_reduce_sum(data.data(), count, type, "bench");
        out.swap(data);
      } else {
        out.assign(mine, T(-1));
        comm.reduce_scatter_sum(data.data(), out.data(), counts, type, "bench");
      }
      break;
    }
    case Collective::all_gather: {
      data.resize(mine);
      for (size_t i = 0; i < mine; ++i) data[i] = value<T>(me, my_offset + static_cast<int64_t>(i));
      out.assign(static_cast<size_t>(count), T(-1));
      expected.resize(static_cast<size_t>(count));
      for (int r = 0; r < p; ++r)
        for (int64_t i = offsets[static_cast<size_t>(r)]; i < offsets[static_cast<size_t>(r) + 1]; ++i)
          expected[static_cast<size_t>(i)] = value<T>(r, i);
      comm.all_gather(data.data(), out.data(), counts, type, "bench");
      break;
    }
    case Collective::broadcast: {
      out.resize(static_cast<size_t>(count));
      expected.resize(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        out[static_cast<size_t>(i)] = me == root ? value<T>(me, i) : T(-1);
        expected[static_cast<size_t>(i)] = value<T>(root, i);
      }
      comm.broadcast(out.data(), count, type, root, "bench");
      break;
    }
  }
  int64_t wrong = 0;
  for (size_t i = 0; i < expected.size(); ++i) wrong += std::memcmp(&out[i], &expected[i], sizeof(T)) != 0;
  return wrong;
}

// Buffers for the timed calls, zero-filled.
struct Timed {
  std::vector<uint8_t> in, out;
  std::vector<int64_t> counts;
};

Timed timed_buffers(const Communicator& comm, Collective collective, int64_t count, size_t esize) {
  Timed t;
  t.counts = even_counts(count, comm.size());
  const size_t total = static_cast<size_t>(count) * esize;
  const size_t mine = static_cast<size_t>(t.counts[static_cast<size_t>(comm.rank())]) * esize;
  switch (collective) {
    case Collective::all_reduce:
    case Collective::broadcast: t.in.assign(total, 0); break;
    case Collective::all_gather: t.in.assign(mine, 0), t.out.assign(total, 0); break;
    case Collective::reduce_scatter: t.in.assign(total, 0), t.out.assign(mine, 0); break;
  }
  return t;
}

void call_once(Communicator& comm, Collective collective, int64_t count, DType type, Timed& t) {
  switch (collective) {
    case Collective::all_reduce: return comm.all_reduce_sum(t.in.data(), count, type, "bench");
    case Collective::broadcast: return comm.broadcast(t.in.data(), count, type, 0, "bench");
    case Collective::all_gather: return comm.all_gather(t.in.data(), t.out.data(), t.counts, type, "bench");
    case Collective::reduce_scatter:
      return comm.reduce_scatter_sum(t.in.data(), t.out.data(), t.counts, type, "bench");
  }
}

// The largest of every rank's x (each rank gets it).
double max_over_ranks(Communicator& comm, double x) {
  std::vector<double> all(static_cast<size_t>(comm.size()));
  comm.all_gather(&x, all.data(), std::vector<int64_t>(all.size(), 1), DType::f64, "bench");
  return *std::max_element(all.begin(), all.end());
}

double seconds_for(Communicator& comm, Collective collective, int64_t count, DType type, Timed& t, int calls) {
  int64_t sync = 0;
  comm.all_reduce_sum(&sync, 1, DType::i64, "bench");  // start together
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call_once(comm, collective, count, type, t);
  const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return max_over_ranks(comm, mine);
}

}  // namespace

int64_t run_checked(Communicator& comm, Collective collective, int64_t count, DType type, int root) {
  if (count < 0) throw std::logic_error("comm::run_checked: negative count");
  switch (type) {
    case DType::f32: return run_checked_typed<float>(comm, collective, count, root);
    case DType::f64: return run_checked_typed<double>(comm, collective, count, root);
    case DType::i64: return run_checked_typed<int64_t>(comm, collective, count, root);
    case DType::u8:
      if (collective == Collective::all_reduce || collective == Collective::reduce_scatter)
        throw std::logic_error(std::string("comm::run_checked: no ") + to_string(collective) + " of uint8");
      return run_checked_typed<uint8_t>(comm, collective, count, root);
  }
  throw std::logic_error("comm::run_checked: unknown type");
}

BenchRow bench_collective(Communicator& comm, Collective collective, int64_t count, DType type, int warmup,
                          int iters) {
  BenchRow row;
  row.collective = collective;
  row.type = type;
  row.ranks = comm.size();
  row.count = count;
  row.size_bytes = static_cast<double>(count) * static_cast<double>(dtype_bytes(type));
  int64_t wrong = run_checked(comm, collective, count, type);
  comm.all_reduce_sum(&wrong, 1, DType::i64, "bench");
  row.wrong = wrong;

  Timed t = timed_buffers(comm, collective, count, dtype_bytes(type));
  for (int i = 0; i < warmup; ++i) call_once(comm, collective, count, type, t);
  if (iters <= 0) {
    const double one = seconds_for(comm, collective, count, type, t, 1);
    iters = static_cast<int>(std::clamp(0.2 / std::max(one, 1e-9), 5.0, 1000.0));
  }
  const double seconds = seconds_for(comm, collective, count, type, t, iters) / iters;
  row.time_us = seconds * 1e6;
  row.algbw_gb_s = seconds > 0 ? row.size_bytes / seconds / 1e9 : 0;
  row.busbw_gb_s = row.algbw_gb_s * bus_bandwidth_factor(collective, row.ranks);
  return row;
}

void print_bench_header(std::ostream& out) {
  char line[256];
  std::snprintf(line, sizeof line, "# %12s  %12s  %6s  %-14s %4s  %10s  %8s  %8s  %6s\n", "size(B)", "count",
                "type", "collective", "root", "time(us)", "algbw", "busbw", "#wrong");
  out << line;
  std::snprintf(line, sizeof line, "# %12s  %12s  %6s  %-14s %4s  %10s  %8s  %8s  %6s\n", "", "(elements)", "", "",
                "", "", "(GB/s)", "(GB/s)", "");
  out << line;
}

void print_bench_row(std::ostream& out, const BenchRow& r) {
  char line[256];
  std::snprintf(line, sizeof line, "  %12.0f  %12lld  %6s  %-14s %4s  %10.1f  %8.2f  %8.2f  %6lld\n", r.size_bytes,
                static_cast<long long>(r.count), to_string(r.type), to_string(r.collective),
                r.collective == Collective::broadcast ? "0" : "-", r.time_us, r.algbw_gb_s, r.busbw_gb_s,
                static_cast<long long>(r.wrong));
  out << line;
}

}  // namespace lowband::comm
