// An all-gather whose Wire says relay: the transport gathers as always (the
// same bytes as a plain all-gather), the recording keeps the flag through the
// MPI log format, and the assembled graph sends each member's message up to
// the relay (graph rank P) once and down to every other member after it.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "comm/in_process.h"
#include "comm/recording.h"

namespace lowband::comm {
namespace {

constexpr int P = 3;
constexpr int64_t kCount = 5;  // bytes each rank contributes

// Every rank's gathered buffer and its log, gathering with `relay` or not.
struct Gathered {
  std::vector<std::vector<uint8_t>> out;
  std::vector<RankLog> logs;
};

Gathered gather(bool relay) {
  Gathered g{std::vector<std::vector<uint8_t>>(P), std::vector<RankLog>(P)};
  InProcessWorld world(P);
  world.run([&](Communicator& inner) {
    RecordingCommunicator comm(inner, g.logs[size_t(inner.rank())]);
    std::vector<uint8_t> mine(kCount);
    for (int64_t i = 0; i < kCount; ++i) mine[size_t(i)] = uint8_t(17 * comm.rank() + i);
    std::vector<uint8_t>& out = g.out[size_t(comm.rank())];
    out.resize(size_t(P * kCount));
    Wire wire("pseudo_grad", 100.0 * P);  // 100 modelled bytes per member
    wire.relay = relay;
    comm.all_gather(mine.data(), out.data(), std::vector<int64_t>(P, kCount), DType::u8, wire);
  });
  return g;
}

sim::StepGraph assemble(const std::vector<RankLog>& logs) {
  std::vector<const RankLog*> views;
  for (const RankLog& log : logs) views.push_back(&log);
  return assemble_step_graph(views);
}

TEST(RelayRecording, GathersTheSameBytesAndRecordsTheRelay) {
  const Gathered ring = gather(false), relay = gather(true);
  EXPECT_EQ(relay.out, ring.out);
  for (int r = 0; r < P; ++r) {
    ASSERT_EQ(relay.logs[size_t(r)].events().size(), 1u);
    EXPECT_TRUE(relay.logs[size_t(r)].events()[0].relay);
    EXPECT_FALSE(ring.logs[size_t(r)].events()[0].relay);
    // The flag survives the log format that MPI gathers the logs in.
    EXPECT_TRUE(RankLog::deserialize(relay.logs[size_t(r)].serialize()).events()[0].relay);
  }
  EXPECT_EQ(assemble(ring.logs).ranks(), P);
  const sim::StepGraph g = assemble(relay.logs);
  ASSERT_EQ(g.ranks(), P + 1);
  int up = 0, down = 0;
  for (const sim::Task& t : g.tasks()) {
    if (t.kind != sim::TaskKind::transfer) continue;
    EXPECT_EQ(t.bytes, 100.0);
    if (t.peer == P) {
      ++up;
      continue;
    }
    ASSERT_EQ(t.rank, P) << "every transfer goes to or from the relay";
    ++down;
    ASSERT_EQ(t.deps.size(), 1u);
    EXPECT_EQ(g.task(t.deps[0]).peer, P);
    EXPECT_NE(g.task(t.deps[0]).rank, t.peer);
  }
  EXPECT_EQ(up, P);
  EXPECT_EQ(down, P * (P - 1));
  for (int r = 0; r < P; ++r) EXPECT_EQ(g.bytes_sent(r), 100.0);
}

TEST(RelayRecording, MembersThatDisagreeOnTheRelayAreRefused) {
  Gathered mixed = gather(true);
  const Gathered ring = gather(false);
  mixed.logs[1] = ring.logs[1];
  EXPECT_THROW(assemble(mixed.logs), std::logic_error);
}

}  // namespace
}  // namespace lowband::comm
