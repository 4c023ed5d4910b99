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

// Each timed call's seconds, the slowest rank's, and the time rank 0 started it.
struct CallTimes {
  std::vector<double> seconds, started_s;
  double total_s = 0;  // their sum
};

// Every call starts together, as the simulated row's one call does: an all-gather of
// one value per rank first, so every ring round carries a message from every rank and
// each returns P-1 hops after the last one arrived. (Back to back, a call's time
// depends on how far apart the ranks left the one before; and an all-reduce of one
// element, the sync this replaced, has P-1 empty segments whose messages the MPI
// transport skips: the ranks left it up to P-1 hops apart, and the first timed call
// of every row took one path round trip more at 300 Mbit/s, 25 ms.)
CallTimes time_calls(Communicator& comm, Collective collective, int64_t count, DType type, Timed& t, int calls) {
  using clock = std::chrono::steady_clock;
  std::vector<double> mine(static_cast<size_t>(calls)), started(static_cast<size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    max_over_ranks(comm, 0.0);
    const auto call_start = clock::now();
    started[static_cast<size_t>(i)] = std::chrono::duration<double>(call_start.time_since_epoch()).count();
    call_once(comm, collective, count, type, t);
    mine[static_cast<size_t>(i)] = std::chrono::duration<double>(clock::now() - call_start).count();
  }
  // Every rank's durations side by side, then the largest of each.
  const size_t n = mine.size(), p = static_cast<size_t>(comm.size());
  std::vector<double> all(n * p);
  comm.all_gather(mine.data(), all.data(), std::vector<int64_t>(p, static_cast<int64_t>(n)), DType::f64, "bench");
  CallTimes times;
  times.seconds.assign(n, 0.0);
  for (size_t r = 0; r < p; ++r)
    for (size_t i = 0; i < n; ++i) times.seconds[i] = std::max(times.seconds[i], all[r * n + i]);
  for (double s : times.seconds) times.total_s += s;
  comm.broadcast(started.data(), calls, DType::f64, 0, "bench");
  times.started_s = std::move(started);
  return times;
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
    const double one = time_calls(comm, collective, count, type, t, 1).total_s;
    iters = static_cast<int>(std::clamp(0.2 / std::max(one, 1e-9), 5.0, 1000.0));
  }
  const CallTimes times = time_calls(comm, collective, count, type, t, iters);
  const double seconds = times.total_s / iters;
  row.time_us = seconds * 1e6;
  row.call_us.reserve(times.seconds.size());
  for (double s : times.seconds) row.call_us.push_back(s * 1e6);
  row.call_started_s = times.started_s;
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

void print_bench_calls(std::ostream& out, const BenchRow& r) {
  char line[160];
  for (size_t i = 0; i < r.call_us.size(); ++i) {
    std::snprintf(line, sizeof line, "#   %s call %zu: %.1f us (slowest rank), started at %.6f s\n",
                  to_string(r.collective), i, r.call_us[i], r.call_started_s[i]);
    out << line;
  }
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
