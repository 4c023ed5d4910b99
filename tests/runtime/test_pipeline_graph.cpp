// The pipeline step graph: its transfers per stage pair, each stage's program
// order, and its replayed step time against the closed forms of a pipeline.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"
#include "runtime/parallel/pipeline/costs.h"
#include "runtime/parallel/dry_steps.h"
#include "runtime/parallel/pipeline/schedule.h"
#include "runtime/estimate/estimate.h"
#include "sim/collectives.h"
#include "sim/replay.h"
#include "test_estimate_support.h"
#include "test_graph_support.h"

namespace lowband {
namespace {

using parallel::steady_step_graph;
using parallel::PipelineCosts;
using test_support::Transfer;
using lowband::BoundaryTraffic;
using lowband::Estimate;

constexpr PipelineSchedule kSchedules[] = {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b};

// Every stage's forward takes t_f and its backward t_b = 2·t_f exactly, on per-node
// devices: memory-bound forward (bandwidth = forward bytes / t_f), compute-bound
// backward (peak = backward FLOPs / t_b). Valid because in this cost model every
// piece's backward moves at most 2x its forward's bytes and does at least 2x its
// FLOPs, so the other roof never binds.
void equalize_stages(Scenario& s, double t_f) {
  const PipelineCosts costs(s);
  for (int st = 0; st < costs.stages(); ++st) {
    sim::DeviceProfile d = testing::instant_device();
    d.name = "stage" + std::to_string(st);
    d.memory_bandwidth_bytes_per_s = costs.forward(st).bytes / t_f;
    d.peak_flops_bf16 = costs.backward(st).flops / (2 * t_f);
    s.devices.node_profiles.push_back({st, d});
  }
}

TEST(PipelineGraph, TransfersPerStagePair) {
  // Per boundary b -> b+1: M activations forward and M gradients back, each
  // n·d·bytes_per_element (compression.boundary none); then the ring all-reduce of
  // the 16-byte loss: 2(P-1) chunks of 16/P from every stage to the next.
  for (PipelineSchedule schedule : kSchedules)
    for (int P : {2, 4})
      for (int M : {1, 4}) {
        Scenario s = testing::small_pp_scenario(P, M);
        s.parallel.schedule = schedule;
        const parallel::PipelineStep step = parallel::pipeline_step_figures(s);
        const sim::StepGraph graph = steady_step_graph(s);
        const double n = 4.0 / M * 4096, dense = n * 256 * 2;
        EXPECT_DOUBLE_EQ(step.message_bytes, dense);
        EXPECT_DOUBLE_EQ(step.gradient_bytes, dense);
        EXPECT_DOUBLE_EQ(step.uncompressed_boundary_bytes, 2 * M * dense);
        std::vector<Transfer> expected;
        for (int b = 0; b + 1 < P; ++b)
          for (int m = 0; m < M; ++m) {
            expected.emplace_back(b, b + 1, dense, "act");
            expected.emplace_back(b + 1, b, dense, "act_grad");
          }
        for (int r = 0; r < P; ++r)
          for (int k = 0; k < 2 * (P - 1); ++k) expected.emplace_back(r, (r + 1) % P, 16.0 / P, "loss");
        std::sort(expected.begin(), expected.end());
        EXPECT_EQ(test_support::transfers(graph), expected) << "P=" << P << " M=" << M;
        EXPECT_DOUBLE_EQ(step.tokens, 4 * 4096.0);
      }
}

TEST(PipelineGraph, SubspaceBoundaryShrinksTheMessages) {
  // Rank k of d = 256: k coordinates and the token id forward, k back
  // (boundary_codec.h), so the boundary carries (2k + 1)/(2d) of the dense bytes.
  const int k = 8;
  Scenario s = testing::small_pp_scenario(4, 2);
  s.compression.boundary.method = BoundaryMethod::subspace;
  s.compression.boundary.rank = k;
  const parallel::PipelineStep step = parallel::pipeline_step_figures(s);
  const sim::StepGraph graph = steady_step_graph(s);
  const double n = 2 * 4096;
  EXPECT_DOUBLE_EQ(step.message_bytes, n * (k + 1) * 2);
  EXPECT_DOUBLE_EQ(step.gradient_bytes, n * k * 2);
  for (int b = 0; b < 3; ++b) {
    EXPECT_DOUBLE_EQ(graph.bytes_sent(b, "act"), 2 * n * (k + 1) * 2);
    EXPECT_DOUBLE_EQ(graph.bytes_sent(b + 1, "act_grad"), 2 * n * k * 2);
  }
  EXPECT_NEAR(lowband::estimate(s).pipeline->boundary_bytes_ratio, (2.0 * k + 1) / (2 * 256), 1e-15);
}

TEST(PipelineGraph, EachStageComputesInScheduleOrder) {
  // Task ids follow each stage's program, so the stage's compute tags in id order
  // are its schedule's F/B sequence, then the optimizer; every forward past stage 0
  // waits for an "act" transfer from the stage before, every backward before the
  // last for an "act_grad" from the stage after.
  for (PipelineSchedule schedule : kSchedules) {
    const int P = 4, M = 4;
    Scenario s = testing::small_pp_scenario(P, M);
    s.parallel.schedule = schedule;
    const sim::StepGraph g = steady_step_graph(s);
    for (int st = 0; st < P; ++st) {
      std::vector<std::string> want;
      for (const auto& op : parallel::pipeline_schedule(schedule, P, st, M))
        want.push_back(op.forward ? "stage_fwd" : "stage_bwd");
      want.push_back("optimizer");
      std::vector<std::string> got;
      for (const sim::Task& t : g.tasks()) {
        if (t.kind != sim::TaskKind::compute || t.rank != st || t.kind_tag == "loss") continue;
        got.push_back(t.kind_tag);
        const bool fwd = t.kind_tag == "stage_fwd", bwd = t.kind_tag == "stage_bwd";
        const int from = fwd ? st - 1 : st + 1;
        if ((fwd && st == 0) || (bwd && st == P - 1) || !(fwd || bwd)) continue;
        const bool waits = std::any_of(t.deps.begin(), t.deps.end(), [&](sim::TaskId d) {
          const sim::Task& dep = g.task(d);
          return dep.kind == sim::TaskKind::transfer && dep.rank == from && dep.peer == st &&
                 dep.kind_tag == (fwd ? "act" : "act_grad");
        });
        EXPECT_TRUE(waits) << t.kind_tag << " on stage " << st;
      }
      EXPECT_EQ(got, want) << "stage " << st;
    }
  }
}

TEST(PipelineGraph, FreeNetworkStepIsTheBubbleClosedForm) {
  // Equal stages (t_f, t_b), no network cost: the last microbatch's forward leaves
  // the last stage at (M + P - 1)·t_f, its backward reaches stage 0 (P - 1 + M)·t_b
  // later, for GPipe and 1F1B alike; the loss all-reduce is free and every stage's
  // optimizer starts then: step = (M + P - 1)(t_f + t_b) + max_s optimizer_s.
  const double t_f = 10;
  for (PipelineSchedule schedule : kSchedules)
    for (int P : {2, 4})
      for (int M : {1, 4}) {
        Scenario s = testing::small_pp_scenario(P, M);
        s.parallel.schedule = schedule;
        s.network.link = {1e30, 0};
        equalize_stages(s, t_f);
        const PipelineCosts costs(s);
        double optimizer = 0;
        for (int st = 0; st < P; ++st) {
          ASSERT_NEAR(costs.seconds(st, costs.forward(st), "f"), t_f, 1e-12 * t_f);
          ASSERT_NEAR(costs.seconds(st, costs.backward(st), "b"), 2 * t_f, 1e-12 * t_f);
          optimizer = std::max(optimizer, costs.seconds(st, costs.optimizer(st), "optimizer"));
        }
        const double expected = (M + P - 1) * (t_f + 2 * t_f) + optimizer;
        const sim::ReplayResult r = sim::replay(s.network, steady_step_graph(s));
        EXPECT_NEAR(r.step_seconds, expected, 1e-9 * expected) << "P=" << P << " M=" << M;
      }
}

TEST(PipelineGraph, TwoStagesOneMicrobatchOnALink) {
  // P = 2, M = 1 on a 1 Gbps / 1 ms link: everything is one chain,
  //   stage 0 F, act (L + S/B), stage 1 F and B, act_grad (L + S/B), stage 0 B,
  //   the loss all-reduce (2 rounds of L + 8/B), then the slower optimizer.
  for (PipelineSchedule schedule : kSchedules) {
    Scenario s = testing::small_pp_scenario(2, 1);
    s.parallel.schedule = schedule;
    const PipelineCosts c(s);
    const double B = s.network.link.bandwidth_bytes_per_s, L = s.network.link.latency_s;
    const double S = 4 * 4096.0 * 256 * 2;
    auto sec = [&](int st, const cost::Cost& cost) { return c.seconds(st, cost, "t"); };
    const double expected = sec(0, c.forward(0)) + sim::point_to_point_seconds(S, B, L) + sec(1, c.forward(1)) +
                            sec(1, c.backward(1)) + sim::point_to_point_seconds(S, B, L) + sec(0, c.backward(0)) +
                            sim::ring_all_reduce_seconds(2, 16, B, L) +
                            std::max(sec(0, c.optimizer(0)), sec(1, c.optimizer(1)));
    const sim::ReplayResult r = sim::replay(s.network, steady_step_graph(s));
    EXPECT_NEAR(r.step_seconds, expected, 1e-6 * expected);
  }
}

TEST(PipelineEstimate, BubbleAndBytesOnAFreeNetwork) {
  // Equal stages on a free network: stage s computes M(t_f + t_b) + optimizer_s of
  // a step of (M + P - 1)(t_f + t_b) + max optimizer; nothing is exposed; each
  // boundary carries M dense messages each way.
  const double t_f = 10;
  for (PipelineSchedule schedule : kSchedules) {
    const int P = 4, M = 4;
    Scenario s = testing::small_pp_scenario(P, M);
    s.parallel.schedule = schedule;
    s.network.link = {1e30, 0};
    equalize_stages(s, t_f);
    const PipelineCosts costs(s);
    std::vector<double> optimizer;
    for (int st = 0; st < P; ++st) optimizer.push_back(costs.seconds(st, costs.optimizer(st), "optimizer"));
    const double slowest = *std::max_element(optimizer.begin(), optimizer.end());
    const double step = (M + P - 1) * 3 * t_f + slowest;
    double idle = 0;
    for (double o : optimizer) idle += step - (M * 3 * t_f + o);
    const Estimate e = lowband::estimate(s);
    EXPECT_NEAR(e.step_seconds, step, 1e-9 * step);
    EXPECT_NEAR(e.pipeline->bubble_fraction, idle / (P * step), 1e-9);
    EXPECT_DOUBLE_EQ(e.pipeline->ideal_bubble_fraction, 3.0 / 7);
    EXPECT_NEAR(e.exposed_comm_seconds, 0, 1e-9 * step);
    EXPECT_NEAR(e.free_network_step_seconds, step, 1e-12 * step);
    EXPECT_NEAR(e.compute_seconds, M * 3 * t_f + slowest, 1e-9 * step);
    EXPECT_DOUBLE_EQ(e.tokens_per_s, 4 * 4096 / e.step_seconds);
    ASSERT_EQ(e.pipeline->boundaries.size(), 3u);
    for (const BoundaryTraffic& b : e.pipeline->boundaries) {
      EXPECT_DOUBLE_EQ(b.forward_bytes, 4 * 4096.0 * 256 * 2);  // M microbatches of n = 4096 rows
      EXPECT_DOUBLE_EQ(b.backward_bytes, 4 * 4096.0 * 256 * 2);
    }
    EXPECT_DOUBLE_EQ(e.pipeline->boundary_bytes_ratio, 1);
    double peak = 0;
    for (const auto& [node, device] : s.devices.node_profiles) peak += device.peak_flops_bf16;
    EXPECT_DOUBLE_EQ(e.mfu, e.model_flops_per_step / (e.step_seconds * peak));
  }
}

TEST(PipelineEstimate, ExposedCommIsWhatTheLinkAdds) {
  // The 2-stage, 1-microbatch chain: the two boundary messages and the loss
  // all-reduce are all on the critical path, so they are all exposed.
  Scenario s = testing::small_pp_scenario(2, 1);
  const double B = s.network.link.bandwidth_bytes_per_s, L = s.network.link.latency_s;
  const double S = 4 * 4096.0 * 256 * 2;
  const double comm = 2 * sim::point_to_point_seconds(S, B, L) + sim::ring_all_reduce_seconds(2, 16, B, L);
  const Estimate e = lowband::estimate(s);
  EXPECT_NEAR(e.exposed_comm_seconds, comm, 1e-6 * e.step_seconds);
  EXPECT_NEAR(e.step_seconds, e.free_network_step_seconds + comm, 1e-6 * e.step_seconds);
}

TEST(PipelineGraph, PlacementMovesStagesOntoNodes) {
  Scenario s = testing::small_pp_scenario(2, 1);
  s.network.nodes = 3;
  s.parallel.placement = {2, 0};
  const sim::StepGraph g = steady_step_graph(s);
  int acts = 0;
  for (const Transfer& t : test_support::transfers(g)) {
    if (std::get<3>(t) != "act") continue;
    ++acts;
    EXPECT_EQ(std::make_pair(std::get<0>(t), std::get<1>(t)), std::make_pair(2, 0));
  }
  EXPECT_EQ(acts, 1);
}

TEST(PipelineGraph, FewerNodesThanStagesNameTheKey) {
  Scenario s = testing::small_pp_scenario(4, 1);
  s.network.nodes = 3;
  try {
    steady_step_graph(s);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.place(), "network.nodes");
  }
}

}  // namespace
}  // namespace lowband
