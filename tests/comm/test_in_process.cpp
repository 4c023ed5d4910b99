// The in-process communicator: every collective on exact inputs for 1..8 ranks,
// uneven counts, split, message order and tags, failures and deadlocks that end
// the run instead of hanging, and the baton (one rank computing at a time).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/bench.h"
#include "comm/in_process.h"
#include "tests/comm/watchdog.h"

namespace lowband::comm {
namespace {

using test::within_seconds;
constexpr int kLimitSeconds = 120;

// Every collective, exact inputs, counts that divide and do not divide evenly.
TEST(InProcess, EveryCollectiveIsExactForOneToEightRanks) {
  within_seconds(kLimitSeconds, [] {
    for (bool baton : {true, false})
      for (int p = 1; p <= 8; ++p) {
        InProcessWorld world(p, baton);
        std::vector<int64_t> wrong(static_cast<size_t>(p), -1);
        world.run([&](Communicator& comm) {
          int64_t w = 0;
          for (int64_t count : {0, 1, 7, 1000, 4099})
            for (Collective c : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                 Collective::broadcast})
              for (DType type : {DType::f32, DType::f64, DType::i64}) w += run_checked(comm, c, count, type, 0);
          for (int root = 0; root < comm.size(); ++root)
            w += run_checked(comm, Collective::broadcast, 333, DType::u8, root);
          w += run_checked(comm, Collective::all_gather, 1001, DType::u8);
          wrong[static_cast<size_t>(comm.rank())] = w;
        });
        for (int r = 0; r < p; ++r) EXPECT_EQ(wrong[static_cast<size_t>(r)], 0) << "P=" << p << " rank " << r;
      }
  });
}

// Floats whose sum depends on the order: every rank gets the ring-order sum, bit for bit.
TEST(InProcess, FloatAllReduceIsTheRingOrderSumBitForBit) {
  within_seconds(kLimitSeconds, [] {
    for (int p = 2; p <= 8; ++p) {
      const int64_t count = 3001;  // segments of unequal length
      std::vector<std::vector<float>> inputs(static_cast<size_t>(p), std::vector<float>(count));
      for (int r = 0; r < p; ++r) {
        std::mt19937 rng(static_cast<unsigned>(17 + r));
        std::uniform_real_distribution<float> dist(-1e4f, 1e4f);
        for (float& x : inputs[static_cast<size_t>(r)]) x = dist(rng) * (r % 2 ? 1e-3f : 1.0f);
      }
      std::vector<const void*> pointers;
      for (const auto& in : inputs) pointers.push_back(in.data());
      std::vector<float> expected(count);
      sum_in_ring_order(pointers, expected.data(), even_counts(count, p), DType::f32);
      // The same sum written out: segment s is ((x[s+1] + x[s+2]) + ...) + x[s].
      std::vector<float> by_hand(count);
      const std::vector<int64_t> even = even_counts(count, p);
      int64_t i = 0;
      for (int seg = 0; seg < p; ++seg)
        for (int64_t j = 0; j < even[static_cast<size_t>(seg)]; ++j, ++i) {
          float s = inputs[static_cast<size_t>((seg + 1) % p)][static_cast<size_t>(i)];
          for (int k = 2; k <= p; ++k) s += inputs[static_cast<size_t>((seg + k) % p)][static_cast<size_t>(i)];
          by_hand[static_cast<size_t>(i)] = s;
        }
      ASSERT_EQ(std::memcmp(expected.data(), by_hand.data(), count * sizeof(float)), 0);
      if (p > 2) {  // and the order shows: rank order differs somewhere
        std::vector<float> rank_order(count);
        sum_in_order(pointers, rank_order.data(), count, DType::f32);
        EXPECT_NE(std::memcmp(expected.data(), rank_order.data(), count * sizeof(float)), 0) << "P=" << p;
      }

      std::vector<std::vector<float>> reduced(static_cast<size_t>(p)), scattered(static_cast<size_t>(p));
      InProcessWorld world(p);
      world.run([&](Communicator& comm) {
        const size_t me = static_cast<size_t>(comm.rank());
        std::vector<float> data = inputs[me];
        comm.all_reduce_sum(data.data(), count, "test");
        reduced[me] = data;
        const std::vector<int64_t> counts = even_counts(count, comm.size());
        scattered[me].resize(static_cast<size_t>(counts[me]));
        comm.reduce_scatter_sum(inputs[me].data(), scattered[me].data(), counts, DType::f32, "test");
      });
      int64_t offset = 0;
      const std::vector<int64_t> counts = even_counts(count, p);
      for (int r = 0; r < p; ++r) {
        EXPECT_EQ(std::memcmp(reduced[static_cast<size_t>(r)].data(), expected.data(), count * sizeof(float)), 0)
            << "P=" << p << " rank " << r;
        EXPECT_EQ(std::memcmp(scattered[static_cast<size_t>(r)].data(), expected.data() + offset,
                              static_cast<size_t>(counts[static_cast<size_t>(r)]) * sizeof(float)),
                  0)
            << "P=" << p << " rank " << r;
        offset += counts[static_cast<size_t>(r)];
      }
    }
  });
}

TEST(InProcess, GatherAndScatterTakeAnyCountsIncludingZero) {
  within_seconds(kLimitSeconds, [] {
    const std::vector<int64_t> counts = {3, 0, 5, 1};
    InProcessWorld world(4);
    world.run([&](Communicator& comm) {
      const int me = comm.rank();
      std::vector<double> mine(static_cast<size_t>(counts[static_cast<size_t>(me)]));
      for (size_t i = 0; i < mine.size(); ++i) mine[i] = 10.0 * me + static_cast<double>(i);
      std::vector<double> all(9, -1);
      comm.all_gather(mine.data(), all.data(), counts, DType::f64, "test");
      EXPECT_EQ(all, (std::vector<double>{0, 1, 2, 20, 21, 22, 23, 24, 30}));
      // Reduce-scatter in place: out is this rank's own segment of in.
      std::vector<double> in(9);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>(i) + me;  // sum over ranks: 4i + 6
      const int64_t offset[] = {0, 3, 3, 8};
      comm.reduce_scatter_sum(in.data(), in.data() + offset[me], counts, DType::f64, "test");
      for (int64_t i = 0; i < counts[static_cast<size_t>(me)]; ++i)
        EXPECT_EQ(in[static_cast<size_t>(offset[me] + i)], 4.0 * static_cast<double>(offset[me] + i) + 6);
    });
  });
}

TEST(InProcess, SplitFormsGroupsInRankOrderWithTheirOwnMessages) {
  within_seconds(kLimitSeconds, [] {
    InProcessWorld world(7);
    std::vector<std::string> seen(7);
    world.run([&](Communicator& comm) {
      const int me = comm.rank();
      const int color = me == 6 ? -1 : me % 2;  // {0,2,4}, {1,3,5}, 6 alone outside
      auto sub = comm.split(color);
      if (me == 6) {
        EXPECT_EQ(sub, nullptr);
        seen[6] = "none";
        return;
      }
      ASSERT_NE(sub, nullptr);
      EXPECT_EQ(sub->size(), 3);
      EXPECT_EQ(sub->rank(), me / 2);
      int64_t sum = me;
      sub->all_reduce_sum(&sum, 1, "test");
      EXPECT_EQ(sum, color == 0 ? 0 + 2 + 4 : 1 + 3 + 5);
      // Same peers, same tag on both communicators: the messages stay apart.
      if (sub->rank() == 0) {
        const int64_t on_sub = 100 + me, on_world = 200 + me;
        sub->send(1, 0, &on_sub, sizeof on_sub, "test");
        comm.send(me + 2, 0, &on_world, sizeof on_world, "test");
      } else if (sub->rank() == 1) {
        int64_t from_world = 0, from_sub = 0;
        comm.recv(me - 2, 0, &from_world, sizeof from_world, "test");
        sub->recv(0, 0, &from_sub, sizeof from_sub, "test");
        seen[static_cast<size_t>(me)] = std::to_string(from_sub) + "," + std::to_string(from_world);
      }
      // A split of a split.
      auto single = sub->split(sub->rank());
      ASSERT_NE(single, nullptr);
      EXPECT_EQ(single->size(), 1);
      double x = 2.5;
      single->all_reduce_sum(&x, 1, "test");
      EXPECT_EQ(x, 2.5);
    });
    EXPECT_EQ(seen[2], "100,200");
    EXPECT_EQ(seen[3], "101,201");
    EXPECT_EQ(seen[6], "none");
  });
}

TEST(InProcess, MessagesKeepTheirOrderPerTag) {
  within_seconds(kLimitSeconds, [] {
    for (bool baton : {true, false}) {
      InProcessWorld world(2, baton);
      std::vector<int> tag1, tag2;
      world.run([&](Communicator& comm) {
        if (comm.rank() == 0) {
          for (int i = 0; i < 50; ++i) {
            const int a = i, b = 1000 + i;
            comm.send(1, 1, &a, sizeof a, "test");
            comm.send(1, 2, &b, sizeof b, "test");
          }
        } else {
          for (int i = 0; i < 50; ++i) {  // all of tag 2 first: tag 1 waits in its mailbox
            int b = 0;
            comm.recv(0, 2, &b, sizeof b, "test");
            tag2.push_back(b);
          }
          for (int i = 0; i < 50; ++i) {
            int a = 0;
            comm.recv(0, 1, &a, sizeof a, "test");
            tag1.push_back(a);
          }
        }
      });
      for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(tag1[static_cast<size_t>(i)], i);
        EXPECT_EQ(tag2[static_cast<size_t>(i)], 1000 + i);
      }
    }
  });
}

TEST(InProcess, SendCopiesThePayload) {
  within_seconds(kLimitSeconds, [] {
    InProcessWorld world(2);
    int got = 0;
    world.run([&](Communicator& comm) {
      if (comm.rank() == 0) {
        int x = 7;
        comm.send(1, 0, &x, sizeof x, "test");
        x = 8;  // after send returned: the receiver must still see 7
        comm.send(1, 1, &x, sizeof x, "test");
      } else {
        int y = 0;
        comm.recv(0, 1, &y, sizeof y, "test");
        comm.recv(0, 0, &got, sizeof got, "test");
        EXPECT_EQ(y, 8);
      }
    });
    EXPECT_EQ(got, 7);
  });
}

TEST(InProcess, RecvMessageTakesAMessageOfAnySize) {
  within_seconds(kLimitSeconds, [] {
    InProcessWorld world(2);
    std::vector<uint8_t> first, second;
    world.run([&](Communicator& comm) {
      if (comm.rank() == 0) {
        const std::vector<uint8_t> a = {1, 2, 3}, b;
        comm.send(1, 4, a.data(), a.size(), "test");
        comm.send(1, 4, b.data(), b.size(), "test");
      } else {
        comm.recv_message(0, 4, first, "test");
        second = {9};
        comm.recv_message(0, 4, second, "test");
      }
    });
    EXPECT_EQ(first, (std::vector<uint8_t>{1, 2, 3}));
    EXPECT_TRUE(second.empty());
  });
}

TEST(InProcess, ErrorsOfUseThrowLogicError) {
  within_seconds(kLimitSeconds, [] {
    InProcessWorld world(2);
    EXPECT_THROW(world.run([](Communicator& comm) {
                   int x = 0;
                   comm.send(2, 0, &x, sizeof x, "test");
                 }),
                 std::logic_error);
    EXPECT_THROW(world.run([](Communicator& comm) {
                   int x = 0;
                   if (comm.rank() == 0) comm.send(1, 0, &x, sizeof x, "test");
                   else comm.recv(0, 0, &x, 2, "test");  // wrong size
                 }),
                 std::logic_error);
    EXPECT_THROW(world.run([](Communicator& comm) {
                   float x[4] = {};
                   comm.all_reduce_sum(x, comm.rank() == 0 ? 4 : 3, "test");  // counts differ
                 }),
                 std::logic_error);
    EXPECT_THROW(world.run([](Communicator& comm) {
                   float x[2] = {};
                   comm.all_gather(x, x, {1}, DType::f32, "test");  // one count for two ranks
                 }),
                 std::logic_error);
    EXPECT_THROW(InProcessWorld(0), std::logic_error);
  });
}

TEST(InProcess, ARankThatThrowsEndsTheRunWithItsException) {
  within_seconds(kLimitSeconds, [] {
    for (bool baton : {true, false}) {
      InProcessWorld world(4, baton);
      try {
        world.run([](Communicator& comm) {
          if (comm.rank() == 2) throw std::runtime_error("rank 2 failed");
          float x = 1;
          comm.all_reduce_sum(&x, 1, "test");  // the others wait here for rank 2
          int y = 0;
          comm.recv((comm.rank() + 1) % 4, 0, &y, sizeof y, "test");
        });
        ADD_FAILURE() << "run() returned";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "rank 2 failed");
      }
      // Two ranks fail on their own: the lower one's exception is rethrown.
      try {
        world.run([](Communicator& comm) {
          int x = 0;
          if (comm.rank() == 0) comm.recv(1, 0, &x, sizeof x, "test");
          if (comm.rank() == 1) throw std::runtime_error("rank 1 failed");
          if (comm.rank() == 3) throw std::runtime_error("rank 3 failed");
          comm.recv(0, 0, &x, sizeof x, "test");
        });
        ADD_FAILURE() << "run() returned";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "rank 1 failed");
      }
    }
  });
}

TEST(InProcess, ADeadlockEndsTheRunNamingWhatEachRankWaitsFor) {
  within_seconds(kLimitSeconds, [] {
    for (bool baton : {true, false}) {
      InProcessWorld world(3, baton);
      try {
        world.run([](Communicator& comm) {
          int x = 0;
          if (comm.rank() == 2) return;  // finishes; the other two wait on each other
          comm.recv(1 - comm.rank(), 5, &x, sizeof x, "test");
        });
        ADD_FAILURE() << "run() returned";
      } catch (const std::logic_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
        EXPECT_NE(what.find("rank 0 in recv(src 1, tag 5)"), std::string::npos) << what;
      }
      // A collective that one rank never calls.
      EXPECT_THROW(world.run([](Communicator& comm) {
                     if (comm.rank() == 0) return;
                     double x = 0;
                     comm.all_reduce_sum(&x, 1, "test");
                   }),
                   std::logic_error);
    }
  });
}

// The baton: one rank computes at a time, and it passes deterministically.
TEST(InProcess, TheBatonLetsOneRankRunAtATimeInAFixedOrder) {
  within_seconds(kLimitSeconds, [] {
    const int p = 4;
    std::vector<std::string> first;
    for (int attempt = 0; attempt < 3; ++attempt) {
      InProcessWorld world(p);
      std::mutex mutex;
      std::vector<std::string> order;
      std::atomic<int> running{0}, most{0};
      auto compute = [&](const std::string& what) {
        const int now = ++running;
        most = std::max(most.load(), now);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // another rank would overlap here
        {
          std::lock_guard<std::mutex> lock(mutex);
          order.push_back(what);
        }
        --running;
      };
      world.run([&](Communicator& comm) {
        const std::string r = std::to_string(comm.rank());
        compute(r + "a");
        float x = 1;
        comm.all_reduce_sum(&x, 1, "test");
        compute(r + "b");
      });
      EXPECT_EQ(most.load(), 1);
      // Rank 0 runs until it waits, then the lowest rank that can go on. Rank 3
      // arrives last and sums its segment; 0, 1, 2 sum theirs in turn; 2, the last
      // to finish its segment, goes on without waiting; then 0, 1, 3.
      const std::vector<std::string> expected = {"0a", "1a", "2a", "3a", "2b", "0b", "1b", "3b"};
      EXPECT_EQ(order, expected);
      if (attempt == 0) first = order;
      EXPECT_EQ(order, first);
    }
  });
}

TEST(InProcess, FreeRunningRanksRunAtTheSameTime) {
  within_seconds(kLimitSeconds, [] {
    InProcessWorld world(2, /*baton=*/false);
    std::atomic<int> arrived{0};
    bool both = true;
    world.run([&](Communicator&) {
      ++arrived;
      // Without a communicator call: with the baton this would wait forever.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (arrived.load() < 2)
        if (std::chrono::steady_clock::now() > give_up) {
          both = false;
          return;
        }
    });
    EXPECT_TRUE(both);
  });
}

}  // namespace
}  // namespace lowband::comm
