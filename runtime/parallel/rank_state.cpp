#include "runtime/parallel/rank_state.h"

#include <istream>
#include <ostream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/binary_io.h"
#include "runtime/parallel/context/attention.h"
#include "runtime/sync/replica_sync.h"

namespace lowband::parallel {
namespace {

constexpr uint64_t kStateTag = 0x6c61792d73746131ULL;          // "lay-sta1"
constexpr uint64_t kContextStateTagV2 = 0x6374782d73746132ULL;  // "ctx-sta2"
constexpr uint64_t kContextStateTagV1 = 0x6374782d73746174ULL;  // "ctx-stat"
constexpr uint64_t kPipelineStateTag = 0x7069702d73746131ULL;   // "pip-sta1"
constexpr uint64_t kDataStateTag = 0x6461742d73746131ULL;       // "dat-sta1"

// A weight sync over context ranks keeps an error buffer with some methods.
bool error_feedback(const RankProgram& p) { return p.replica_sync() && p.replica_sync()->error_feedback(); }

std::string rank_blob(const RankProgram& p, int rank, const std::function<void(int, std::ostream&)>& more) {
  std::ostringstream one;
  const std::vector<float> params = p.model().params_to_host();  // host copies: any backend
  binary::write_array(one, params.data(), uint64_t(params.size()));
  p.optimizer().save_state(one);
  if (p.context()) p.context()->save_codec_state(one);
  if (error_feedback(p)) p.replica_sync()->save_state(one);
  p.save_boundary_state(one);
  more(rank, one);
  return one.str();
}

void load_blob(const std::string& blob, RankProgram& p, int rank, const kernels::Backend& k,
               const std::function<void(int, std::istream&)>& more) {
  std::istringstream one(blob);
  model::Model& m = p.model();
  std::vector<float> host(size_t(m.param_count()));
  binary::read_array_into(one, host.data(), uint64_t(host.size()), "a rank's parameters");
  k.upload(m.params(), host.data(), host.size() * sizeof(float));
  p.optimizer().load_state(one);
  if (p.context()) p.context()->load_codec_state(one);
  if (error_feedback(p)) p.replica_sync()->load_state(one, m.layout());
  p.load_boundary_state(one);
  more(rank, one);
}

void check_ranks(std::istream& in, int ranks) {
  const int64_t count = binary::read_i64(in, "the rank count");
  if (count != ranks)
    throw binary::BinaryFormatError("a state of " + std::to_string(count) + " ranks, the trainer has " +
                                    std::to_string(ranks));
}

void check_codecs(std::istream& in, const std::string& codecs) {
  const std::string saved = binary::read_string(in, "the codec's name");
  if (saved != codecs) throw binary::BinaryFormatError("codec \"" + saved + "\", the scenario's is \"" + codecs + "\"");
}

// "ctx-sta2" and "ctx-stat" carry the whole model's parameter count.
void check_params(std::istream& in, int64_t params) {
  const int64_t count = binary::read_i64(in, "the parameter count");
  if (count != params)
    throw binary::BinaryFormatError("models of " + std::to_string(count) + " parameters, the scenario's have " +
                                    std::to_string(params));
}

// Every rank's blob, in rank order, from a state of any of the formats.
std::vector<std::string> read_blobs(std::istream& in, int ranks, const std::string& codecs, const Scenario& s) {
  const uint64_t tag = binary::read_u64(in, "the trainer state");
  std::vector<std::string> blobs(static_cast<size_t>(ranks));
  const int64_t params = model::ParamLayout(s.model).count();
  if (tag == kStateTag || tag == kContextStateTagV2 || tag == kContextStateTagV1) {
    check_ranks(in, ranks);
    if (tag != kStateTag) check_params(in, params);
    check_codecs(in, codecs);
    if (tag == kContextStateTagV1) return read_context_state_v1(in, s, params);
    for (int r = 0; r < ranks; ++r) {
      // ctx-sta2: a flag, set for a rank whose blob is rank 0's; lay-sta1: the
      // earlier rank whose blob this is, or -1 where the blob follows.
      const int64_t same = tag == kStateTag ? binary::read_i64(in, "a rank's reference")
                                            : (binary::read_bool(in, "a rank's flag") ? 0 : -1);
      if (same >= r) throw binary::BinaryFormatError("rank " + std::to_string(r) + "'s state refers to a later rank");
      blobs[size_t(r)] = same >= 0 ? blobs[size_t(same)] : binary::read_string(in, "a rank's state");
    }
    return blobs;
  }
  if (tag != kPipelineStateTag && tag != kDataStateTag)
    throw binary::BinaryFormatError("no trainer state where one was expected");
  check_ranks(in, ranks);
  for (std::string& blob : blobs) blob = binary::read_string(in, "a rank's state");
  return blobs;
}

}  // namespace

std::string rank_snapshot(const RankProgram& program) {
  return rank_blob(program, 0, [](int, std::ostream&) {});
}

void restore_rank(const std::string& snapshot, RankProgram& program, const kernels::Backend& k) {
  load_blob(snapshot, program, 0, k, [](int, std::istream&) {});
}

void save_rank_states(std::ostream& out, const RankWorld& world, const std::string& codecs,
                      const ConstProgramOf& program, const std::function<void(int, std::ostream&)>& more) {
  const std::vector<std::string> blobs = world.gather([&](int r) { return rank_blob(program(r), r, more); });
  binary::write_u64(out, kStateTag);
  binary::write_i64(out, world.ranks());
  binary::write_string(out, codecs);
  std::unordered_map<std::string, int> first;  // each distinct blob's first rank
  for (int r = 0; r < world.ranks(); ++r) {
    const auto [at, is_new] = first.emplace(blobs[size_t(r)], r);
    binary::write_i64(out, is_new ? -1 : at->second);
    if (is_new) binary::write_string(out, blobs[size_t(r)]);
  }
}

void load_rank_states(std::istream& in, const RankWorld& world, const std::string& codecs, const kernels::Backend& k,
                      const Scenario& scenario, const ProgramOf& program,
                      const std::function<void(int, std::istream&)>& more) {
  const std::vector<std::string> blobs = read_blobs(in, world.ranks(), codecs, scenario);
  for (int r : world.local_ranks()) load_blob(blobs[size_t(r)], program(r), r, k, more);
}

}  // namespace lowband::parallel
