#pragma once
// The checkpoint of LayoutTrainer (layout_trainer.h), one format for every layout
// ("lay-sta1"): the rank count, the layout's codecs (CompressedTraffic::codec; a
// state of other codecs is refused), then per rank either a reference to an
// earlier rank whose state is the same bytes (replicas under all_reduce, context
// ranks whose codecs keep no state: written once) or its blob — its parameters,
// its AdamW state, its K/V codec's state where it has one, its weight sync's
// error buffer and Q factors where it keeps them (sparse_grad, topk_grad,
// sparse_update, lowrank_grad over a context group: a context-only replica's or
// a pipeline stage's) and what `more` adds (a data-parallel rank's outer syncs,
// in part order). Under MPI the blobs are gathered onto every process
// (RankWorld::gather) and each process loads its own ranks'.
//
// Still read, as the formats of the trainers before there was one: the context
// trainer's "ctx-sta2" (the same blobs, a reference to rank 0 only) and "ctx-stat"
// (rank_state_v1.cpp), the pipeline trainer's "pip-sta1" and the data-parallel
// trainer's "dat-sta1" (the same blobs, none referred).
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "runtime/parallel/rank_program.h"
#include "runtime/parallel/rank_world.h"
#include "runtime/scenario/scenario.h"

namespace lowband::parallel {

using ProgramOf = std::function<RankProgram&(int rank)>;  // a local rank's program
using ConstProgramOf = std::function<const RankProgram&(int rank)>;

void save_rank_states(std::ostream& out, const RankWorld& world, const std::string& codecs,
                      const ConstProgramOf& program, const std::function<void(int rank, std::ostream&)>& more);
// binary::BinaryFormatError for a state of another layout (rank count, codecs,
// parameter counts, a truncated blob); the ranks may then be half loaded.
void load_rank_states(std::istream& in, const RankWorld& world, const std::string& codecs,
                      const kernels::Backend& k, const Scenario& scenario, const ProgramOf& program,
                      const std::function<void(int rank, std::istream&)>& more);

// One rank's state as a checkpoint's blob holds it, without what `more` adds
// (partial participation puts a late replica's ranks back to the round's start
// with it; their outer syncs did not change in the round).
std::string rank_snapshot(const RankProgram& program);
void restore_rank(const std::string& snapshot, RankProgram& program, const kernels::Backend& k);

// The context trainer's first format: all parameters, then all optimisers (each
// may refer to rank 0's), then one codec state every rank starts from; as blobs.
std::vector<std::string> read_context_state_v1(std::istream& in, const Scenario& scenario, int64_t params);

}  // namespace lowband::parallel
