#pragma once
// Where every rank of a run sits: its data-parallel replica, pipeline stage and
// context rank, and the network node it runs on; and the group of ranks each
// parallel dimension talks in. Rank order: replica-major, then stage, then
// context rank (parallel.replicas lists each replica's nodes in that order).
//
// A replica is context ranks, pipeline stages, or stages of context ranks (rank
// s·C + c); data parallelism runs several replicas, alike or not (parallel.replicas).
#include <vector>

#include "runtime/scenario/scenario.h"
#include "sim/step_graph.h"

namespace lowband::parallel {

// Which trainer trains a scenario and which estimate times it, one rule for both:
// data-parallel replicas (parallel.data > 1 or more than one parallel.replicas
// entry), else pipeline stages (parallel.pipeline > 1), else context ranks.
enum class LayoutKind { context, pipeline, data };
LayoutKind layout_kind(const ParallelConfig& parallel);

// The sequences each context rank of a replica without stages keeps in flight
// (context/rank.h): parallel.microbatches where there is a K/V exchange to hide
// (context > 1), else 1. (With stages, microbatches are the pipeline's.)
int sequences_in_flight(const ParallelConfig& replica);

struct RankPlace {
  int replica = 0, stage = 0, context_rank = 0;
  int node = 0;  // network node
};

class Layout {
 public:
  explicit Layout(const ParallelConfig& parallel);

  int ranks() const { return int(places_.size()); }
  const RankPlace& place(int rank) const { return places_.at(size_t(rank)); }
  int node_of(int rank) const { return place(rank).node; }
  int rank_at(int replica, int stage, int context_rank) const;
  // The node of the data sync's relay (parallel.data_sync.exchange relay), or -1.
  // A recorded graph holds it as rank ranks(), one past the ranks (comm::assemble_step_graph).
  int relay_node() const { return relay_node_; }

  // The ranks `rank` exchanges with in one dimension, in rank order (itself
  // included): same replica and stage (context), same replica and context rank
  // (pipeline), same stage and context rank in every replica (data).
  std::vector<int> context_group(int rank) const;
  std::vector<int> pipeline_group(int rank) const;
  std::vector<int> data_group(int rank) const;

 private:
  struct Replica {
    int first_rank = 0, pipeline = 1, context = 1;
  };
  std::vector<Replica> replicas_;
  std::vector<RankPlace> places_;
  int relay_node_ = -1;
};

// `graph` (one task list per rank) moved onto network nodes: every task's rank
// and peer through layout.node_of, the relay's (rank layout.ranks(), where the
// graph has it) onto layout.relay_node(). Task ids and dependencies stay as they are.
sim::StepGraph place_on_nodes(const sim::StepGraph& graph, const Layout& layout);

}  // namespace lowband::parallel
